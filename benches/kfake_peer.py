"""franz-go's kfake (an in-process fake Kafka cluster in Go) as a bench peer: a tiny main of ours, written to a
cache directory and built there with `go build` from the Go module proxy on first use (franz-go v1.22.3,
kmsg v1.15.1, and kfake's own module, which has no tags: pinned by pseudo-version below). Nothing of it is
kept in the repository but this file.

    kfake_binary() -> path of the built binary, or raises KfakeUnavailable(reason)
    KfakeProcess(binary, topics) -> one single-broker kfake cluster on a free 127.0.0.1 port
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))
from server_support import _connects, free_port, wait_until  # noqa: E402

KFAKE = "github.com/twmb/franz-go/pkg/kfake v0.0.0-20260918054303-01f206a7e32c"
REQUIRES = (KFAKE, "github.com/twmb/franz-go v1.22.3", "github.com/twmb/franz-go/pkg/kmsg v1.15.1")

MAIN_GO = """\
// One kfake broker on 127.0.0.1:<port> with the topics given as name:partitions; runs until stdin closes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

type topics []string

func (t *topics) String() string     { return strings.Join(*t, ",") }
func (t *topics) Set(v string) error { *t = append(*t, v); return nil }

func main() {
	port := flag.Int("port", 9092, "listen port on 127.0.0.1")
	var ts topics
	flag.Var(&ts, "topic", "name:partitions (repeatable)")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port),
		kfake.GroupMinSessionTimeout(1000 * time.Millisecond)}
	for _, t := range ts {
		name, n, _ := strings.Cut(t, ":")
		count, err := strconv.Atoi(n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad -topic", t)
			os.Exit(2)
		}
		opts = append(opts, kfake.SeedTopics(int32(count), name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening on", c.ListenAddrs()[0])
	io.Copy(io.Discard, os.Stdin)
	c.Close()
}
"""


class KfakeUnavailable(RuntimeError):
    pass


def kfake_binary() -> Path:
    """Build (once per source and pins) and return the kfake peer binary."""
    go = shutil.which("go")
    if go is None:
        raise KfakeUnavailable("no Go toolchain (go not on PATH)")
    key = hashlib.sha256((MAIN_GO + "\n".join(REQUIRES)).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafkagroup" / f"kfake-{key}"
    binary = cache / "kfake-peer"
    if binary.exists():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "main.go").write_text(MAIN_GO)
    (cache / "go.mod").write_text("module kafkagroup.bench/kfakepeer\n\ngo 1.22\n\nrequire (\n"
                                  + "".join(f"\t{r}\n" for r in REQUIRES) + ")\n")
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    for step in (["go", "mod", "tidy"], ["go", "build", "-o", str(binary), "."]):
        done = subprocess.run(step, cwd=cache, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise KfakeUnavailable(f"{' '.join(step)} failed: {done.stderr.strip()[-300:]}")
    return binary


class KfakeProcess:
    def __init__(self, binary: Path, topics: dict[str, int]) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        argv = [str(binary), "-port", str(self.port)]
        for name, n in topics.items():
            argv += ["-topic", f"{name}:{n}"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_until(lambda: _connects(self.port), 20, "kfake to listen")
        except BaseException:
            self.kill()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
