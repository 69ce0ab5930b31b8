"""generate_fleet's arguments are checked before use: a range that cannot be sampled or a fraction outside
0..1 is refused naming the argument (a zero lower bound used to fail inside math.log: "math domain error")."""
from __future__ import annotations

import pytest

from kafkagroup.spark.fleet import generate_fleet


@pytest.mark.parametrize("kwargs, named", [
    ({"partitions": (0, 150)}, "partitions"),
    ({"members": (0, 5)}, "members"),
    ({"topics": (3, 2)}, "topics"),
    ({"members": (2,)}, "members"),
    ({"partitions": (1.5, 10)}, "partitions"),
    ({"topics": (True, 3)}, "topics"),
    ({"uniform_fraction": 1.5}, "uniform_fraction"),
    ({"static_fraction": -0.1}, "static_fraction"),
    ({"static_fraction": "half"}, "static_fraction"),
])
def test_a_bad_argument_is_refused_by_name(kwargs, named):
    with pytest.raises(ValueError, match=f"generate_fleet: {named} must be"):
        generate_fleet(3, **kwargs)


@pytest.mark.parametrize("num_groups", [-1, 2.0, True, "3"])
def test_a_bad_group_count_is_refused(num_groups):
    with pytest.raises(ValueError, match="generate_fleet: num_groups must be an integer >= 0"):
        generate_fleet(num_groups)


def test_the_smallest_ranges_are_accepted():
    fleet = generate_fleet(4, seed=1, members=(1, 1), partitions=(1, 1), topics=(1, 1), uniform_fraction=0,
                           static_fraction=1)
    assert fleet.groups.num_rows == 4
    assert fleet.num_partitions == 4 and fleet.num_members == 4
    assert generate_fleet(0).groups.num_rows == 0
