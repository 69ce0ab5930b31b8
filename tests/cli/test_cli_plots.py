"""``kafkagroup assign --plot``: a PNG is written, has the expected size and is not blank."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kafkagroup.groupfile import EXAMPLE_JSON
from cli_support import run_cli, write_group


def read_png(path):
    import matplotlib.image as mpimg

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    return mpimg.imread(str(path))


def distinct_colours(image) -> int:
    rgb = (image[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    return len(np.unique(rgb, axis=0))


def test_assign_plot_small_group(tmp_path, capsys):
    png = tmp_path / "moves.png"
    run = run_cli(capsys, "assign", write_group(tmp_path, json.loads(EXAMPLE_JSON)), "--plot", str(png))
    assert run.code == 0 and run.err_lines == [f"kafkagroup: plot written to {png}"]
    image = read_png(png)
    height, width = image.shape[:2]
    assert height > 4 * 200 and width >= 800           # one panel per strategy
    assert distinct_colours(image) > 20                 # bars, text, lines: not a blank canvas


@pytest.mark.parametrize("members", [250])
def test_assign_plot_large_group(tmp_path, capsys, members):
    data = {"topics": {"t0": 500, "t1": 499},
            "members": {f"m{i:04d}": {"topics": ["t0", "t1"], "owned": [["t0", 2 * i], ["t0", 2 * i + 1]],
                                      "generation": 1} for i in range(members)}}
    png = tmp_path / "large.png"
    run = run_cli(capsys, "assign", write_group(tmp_path, data), "--strategy", "sticky", "--plot", str(png),
                  "--format", "json")
    assert run.code == 0
    assert json.loads(run.out)["sticky"]["metrics"]["moved"] == 0
    assert distinct_colours(read_png(png)) > 10
