"""``kafkagroup assign`` / ``demo`` as a user meets them: one-line errors, warnings, literal names, summaries.

Every test runs kafkagroup.cli.main(argv) in-process and asserts that no traceback is printed and that a
mistake is exactly one ``kafkagroup: ...`` line with exit code 2.
"""
from __future__ import annotations

import argparse
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkagroup
from kafkagroup.cli import SUMMARY_MEMBERS, build_parser
from kafkagroup.groupfile import EXAMPLE_JSON, MAX_FILE_PARTITIONS, parse_group
from cli_support import run_cli, write_group

STRATEGIES = kafkagroup.strategies()


def one_error(run, expected: str) -> None:
    assert run.code == 2
    assert run.err_lines == [f"kafkagroup: {expected}"]


# ---------------------------------------------------------------------------------------------
# names are printed literally


def test_member_ids_with_brackets_are_printed_literally(tmp_path, capsys):
    members = {"[withheld]": {"topics": ["t"]}, "svc[/]": {"topics": ["t"]}, "[bold]x[/bold]": {"topics": ["t"]}}
    path = write_group(tmp_path, {"topics": {"t[0]": 1, "t": 6}, "members": members})
    run = run_cli(capsys, "assign", path, "--strategy", "range")
    assert run.code == 0 and run.err == ""
    for name in ("[withheld]", "svc[/]", "[bold]x[/bold]"):
        assert name in run.out


def test_demo_shows_the_withheld_row(capsys):
    run = run_cli(capsys, "demo", "--topics", "2", "--partitions", "10", "--members", "3")
    assert run.code == 0
    assert "[withheld]" in run.out and "Sample group" in run.out
    assert "balance_gap        0 = as balanced" in run.out          # the legend under the quality table


def test_file_name_with_markup_in_titles(tmp_path, capsys):
    path = write_group(tmp_path, {"topics": {"t": 2}, "members": {"C0": ["t"]}}, name="g[red].json")
    run = run_cli(capsys, "assign", path, "--strategy", "range")
    assert run.code == 0 and f"{path}: quality" in run.out


# ---------------------------------------------------------------------------------------------
# mistakes: exactly one line, exit code 2


@pytest.mark.parametrize("data, expected", [
    ({"topics": ["a"], "members": {"C0": ["a"]}},
     "'topics' must be an object mapping topic name to partition count (or to replica racks per partition), "
     "got list: [\"a\"]"),
    ({"topics": {"a": 2}, "members": ["C0"]},
     "'members' must be an object mapping member id to its subscription, got list"),
    ({"topics": {"a": 2}, "members": {"C0": {"topic": ["a"]}}},
     "member 'C0': missing key 'topics'; found 'topic' (did you mean 'topics'?)"),
    ({"topics": {"a": 2}, "members": {"C0": {}}}, "member 'C0': missing key 'topics'"),
    ({"topics": {"a": 2}, "members": {"C0": "a"}},
     "member 'C0': expected an object with 'topics' (and optionally 'owned_partitions', 'generation_id', "
     "'group.instance.id', 'client.rack'), got \"a\""),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": "a"}}},
     "member 'C0': 'topics' must be a list of topic names, got \"a\""),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a", "a"]}}},
     "member 'C0': 'topics' lists a topic twice: [\"a\", \"a\"]"),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "owned": [["a", 0]], "owned_partitions": []}}},
     "member 'C0': 'owned' and 'owned_partitions' are the same key ('owned_partitions'); give it once"),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "owned": [["a", 0], ["a", 0]]}}},
     "member 'C0' claims partition a-0 twice"),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "owned": [["a"]]}}},
     "member 'C0': 'owned' entry [\"a\"] is not [topic, partition], {\"topic\": ..., \"partition\": ...} or "
     "{\"topic\": ..., \"partitions\": [...]}"),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "owned": [["a", "0"]]}}},
     "member 'C0': 'owned' entry [\"a\", \"0\"]: expected a topic name and an integer partition"),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "owned": [["a", 5]]}}},
     "member 'C0' claims partition a-5 of a topic with 2 partitions"),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "generation": "3"}}},
     "member 'C0': 'generation' must be a 32-bit integer, got \"3\""),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "generation_id": 2**31}}},
     "member 'C0': 'generation_id' must be a 32-bit integer, got 2147483648"),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "rack": 3}}},
     "member 'C0': 'rack' must be a non-empty string, got 3"),
    ({"topics": {"a": 2}, "members": {"C0": {"topics": ["a"], "instance": "i"}, "C1": {"topics": ["a"],
                                                                                      "instance_id": "i"}}},
     "members 'C0' and 'C1' share group.instance.id 'i'"),
    ({"topics": {"a": -2}, "members": {}}, "topic 'a': negative partition count -2"),
    ({"topics": {"a": "3"}, "members": {}},
     "topic 'a': expected a partition count or a list of replica racks per partition, got \"3\""),
    ({"topics": {"a": ["r0"]}, "members": {}},
     "topic 'a' partition 0: replica racks must be a list of rack names (or null), got \"r0\""),
    ({"topics": {"a": 2}}, "missing top-level key 'members'"),
    ({"topic": {"a": 2}, "members": {}}, "missing top-level key 'topics' (found 'topic')"),
    ([1, 2], "expected a JSON object with 'topics' and 'members', got list"),
    ({"topics": {"a": 2}, "members": {"": ["a"]}}, "a member id is the empty string"),
])
def test_group_file_mistakes(tmp_path, capsys, data, expected):
    path = write_group(tmp_path, data)
    one_error(run_cli(capsys, "assign", path), f"{path}: {expected}")


def test_partition_counts_are_bounded_before_allocation(tmp_path, capsys):
    path = write_group(tmp_path, {"topics": {"huge": 2_147_483_647}, "members": {"C0": ["huge"]}})
    one_error(run_cli(capsys, "assign", path),
              f"{path}: topic 'huge': 2,147,483,647 partitions; kafkagroup assign takes at most 2,000,000 "
              f"partitions per group (kafkagroup.assign_arrays for larger)")
    many = {f"t{i}": MAX_FILE_PARTITIONS // 2 for i in range(3)}
    path = write_group(tmp_path, {"topics": many, "members": {"C0": list(many)}})
    one_error(run_cli(capsys, "assign", path),
              f"{path}: 3,000,000 partitions in subscribed topics; kafkagroup assign takes at most 2,000,000 "
              f"partitions per group (kafkagroup.assign_arrays for larger)")
    # a topic nobody subscribes to is never sized (as in the engine's bound)
    path = write_group(tmp_path, {"topics": {"huge": 2**31 - 1, "t": 2}, "members": {"C0": ["t"]}})
    run = run_cli(capsys, "assign", path, "--strategy", "range", "--format", "json")
    assert run.code == 0 and json.loads(run.out)["range"]["metrics"]["assigned"] == 2


def test_unreadable_files(tmp_path, capsys):
    missing = str(tmp_path / "nosuch.json")
    one_error(run_cli(capsys, "assign", missing), f"{missing}: cannot read {missing}: No such file or directory")
    path = write_group(tmp_path, "{\"topics\": {")
    one_error(run_cli(capsys, "assign", path),
              f"{path}: {path} is not valid JSON: Expecting property name enclosed in double quotes: "
              f"line 1 column 13 (char 12)")
    path = write_group(tmp_path, '{"topics": {"a": 1}, "members": {"C0": ["a"], "C0": ["a"]}}')
    one_error(run_cli(capsys, "assign", path), f"{path}: key 'C0' appears twice in one object")
    one_error(run_cli(capsys, "assign", str(tmp_path)), f"{tmp_path}: cannot read {tmp_path}: Is a directory")


def test_command_line_mistakes(tmp_path, capsys):
    one_error(run_cli(capsys, "assign"),
              "assign: give a group file (or '-' for standard input); kafkagroup assign --example-json prints one")
    path = write_group(tmp_path, {"topics": {"a": 1}, "members": {"C0": ["a"]}})
    one_error(run_cli(capsys, "assign", path, "--summary", "--all-members"),
              "assign: --summary and --all-members exclude each other")
    one_error(run_cli(capsys, "assign", path, "--plot", str(tmp_path / "no" / "dir.png")),
              f"assign --plot {tmp_path / 'no' / 'dir.png'}: cannot write: no such directory: {tmp_path / 'no'}")
    one_error(run_cli(capsys, "demo", "--members", "0"), "demo: --members must be at least 1, got 0")
    run = run_cli(capsys, "assign", path, "--strategy", "nosuch")          # argparse: usage + one error line
    assert run.code == 2 and run.err_lines[-1].startswith("kafkagroup assign: error: argument --strategy")


# ---------------------------------------------------------------------------------------------
# warnings: accepted as Kafka would, but said on stderr


def test_unknown_topic_and_ignored_keys_are_warnings(tmp_path, capsys):
    data = {"topics": {"orders": 4}, "members": {
        "C0": {"topics": ["orders", "order"], "rak": "r0", "_comment": "quiet"},
        "C1": {"topics": ["orders", "order"]}}, "name": "x"}
    path = write_group(tmp_path, data)
    run = run_cli(capsys, "assign", path, "--strategy", "range", "--format", "json")
    assert run.code == 0
    assert run.err_lines == [
        f"kafkagroup: warning: {path}: ignored top-level key 'name'",
        f"kafkagroup: warning: {path}: member 'C0': ignored key 'rak' (did you mean 'rack'?)",
        f"kafkagroup: warning: {path}: topic 'order' (subscribed by 'C0', 'C1') is not in 'topics': skipped, as "
        f"Kafka's assignors do (did you mean 'orders'?)",
    ]
    assert json.loads(run.out)["range"]["unknown_topics"] == ["order"]


def test_contested_claims_are_warnings_and_follow_the_engine(tmp_path, capsys):
    data = {"topics": {"t": 4, "u": 1}, "members": {
        "A": {"topics": ["t"], "owned": [["t", 0], ["t", 1]], "generation": 3},
        "B": {"topics": ["t"], "owned": [["t", 0]], "generation": 3},
        "C": {"topics": ["t"], "owned": [["t", 1], ["t", 2]], "generation": 4},
        "D": {"topics": ["u"], "owned": [["t", 3]], "generation": 9}}}
    path = write_group(tmp_path, data)
    run = run_cli(capsys, "assign", path, "--strategy", "sticky")
    assert run.code == 0
    assert run.err_lines == [
        f"kafkagroup: warning: {path}: member 'D' claims t-3 of topics it does not subscribe to: not counted as "
        f"their previous owner",
        f"kafkagroup: warning: {path}: partition t-0 is claimed by 'A' (generation 3), 'B' (generation 3): the tie "
        f"at the highest generation voids every claim",
        f"kafkagroup: warning: {path}: partition t-1 is claimed by 'A' (generation 3), 'C' (generation 4): 'C' "
        f"keeps it (highest generation)",
    ]
    group = parse_group(data)
    assert group.previous_owner == {("t", 1): "C", ("t", 2): "C"}


# ---------------------------------------------------------------------------------------------
# Kafka's key names, the aliases, the example


def aliased(data, names):
    renamed = {}
    for member_id, spec in data["members"].items():
        renamed[member_id] = {names.get(k, k): v for k, v in spec.items()}
    return {"topics": data["topics"], "members": renamed}


def test_kafka_key_names_and_aliases_give_the_same_assignment(tmp_path, capsys):
    base = json.loads(EXAMPLE_JSON)
    short = aliased(base, {"owned_partitions": "owned", "generation_id": "generation", "group.instance.id": "instance",
                           "client.rack": "rack"})
    spark = aliased(base, {"group.instance.id": "instance_id"})
    outputs = []
    for i, data in enumerate((base, short, spark)):
        run = run_cli(capsys, "assign", write_group(tmp_path, data, f"g{i}.json"), "--format", "json")
        assert run.code == 0 and run.err == ""
        outputs.append(json.loads(run.out))
    assert outputs[0] == outputs[1] == outputs[2] or all(
        {s: o[s]["assignment"] for s in o} == {s: outputs[0][s]["assignment"] for s in o} for o in outputs)
    # the example is what it says: static member first, rack-aware, three members, nothing unassigned
    first = outputs[0]
    assert set(first) == set(STRATEGIES)
    assert list(first["range"]["assignment"]) == ["consumer-1", "consumer-2", "consumer-3"]
    assert all(first[s]["metrics"]["unassigned"] == 0 for s in STRATEGIES)


def test_example_json_is_printed_and_assigns_cleanly(tmp_path, capsys):
    run = run_cli(capsys, "assign", "--example-json")
    assert run.code == 0 and run.out == EXAMPLE_JSON
    run = run_cli(capsys, "assign", write_group(tmp_path, run.out))
    assert run.code == 0 and run.err == ""


def test_kafka_consumer_protocol_owned_form(tmp_path, capsys):
    pairs = {"topics": {"t": 4}, "members": {"A": {"topics": ["t"], "owned": [["t", 0], ["t", 1]], "generation": 1},
                                             "B": {"topics": ["t"], "owned": [["t", 2], ["t", 3]], "generation": 1}}}
    nested = {"topics": {"t": 4}, "members": {
        "A": {"topics": ["t"], "owned_partitions": [{"topic": "t", "partitions": [0, 1]}], "generation_id": 1},
        "B": {"topics": ["t"], "owned_partitions": [{"topic": "t", "partition": 2}, {"topic": "t", "partition": 3}],
              "generation_id": 1}}}
    a = parse_group(pairs)
    b = parse_group(nested)
    assert a.members == b.members and a.previous_owner == b.previous_owner


def test_readme_documents_the_group_file():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "kafkagroup assign --example-json" in readme
    for key in ("owned_partitions", "generation_id", "group.instance.id", "client.rack", "instance_id"):
        assert key in readme
    example = readme.split("#### The group file", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    group = parse_group(json.loads(example))
    assert group.warnings == [] and group.previous_owner[("payments", 1)] == "consumer-1"


# ---------------------------------------------------------------------------------------------
# output people can read: version, help, summary, legend, null bound


def test_version(capsys):
    run = run_cli(capsys, "--version")
    assert run.code == 0 and run.out.strip() == f"kafkagroup {kafkagroup.__version__}"


def test_every_option_of_our_commands_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in sub.choices.items():
        if name == "simulate":        # the simulator's own command (kafkagroup/sim)
            continue
        for action in command._actions:
            if not action.help and not isinstance(action, argparse._HelpAction):
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []
    assert all(a.help for a in parser._actions if a.option_strings)


def big_group(members: int) -> dict:
    return {"topics": {"t0": 1000, "t1": 1001},
            "members": {f"m{i:05d}": {"topics": ["t0", "t1"]} for i in range(members)}}


def test_large_groups_get_a_summary_by_default(tmp_path, capsys):
    path = write_group(tmp_path, big_group(SUMMARY_MEMBERS + 1))
    run = run_cli(capsys, "assign", path, "--strategy", "roundrobin")
    assert run.code == 0
    assert f"{SUMMARY_MEMBERS + 1} members: a load summary per strategy (--all-members lists every member)" in run.out
    assert "members by load" in run.out and "9: 9  10: 192" in run.out      # 2,001 partitions over 201 members
    assert "m00007" not in run.out and len(run.out.splitlines()) < 40
    full = run_cli(capsys, "assign", path, "--strategy", "roundrobin", "--all-members")
    assert "m00007" in full.out and len(full.out.splitlines()) > SUMMARY_MEMBERS
    small = write_group(tmp_path, big_group(3), "small.json")
    run = run_cli(capsys, "assign", small, "--strategy", "range", "--summary")
    assert "m00001" not in run.out and "members by load" in run.out
    run = run_cli(capsys, "assign", path, "--strategy", "range", "--format", "json")
    out = json.loads(run.out)["range"]
    assert "assignment" not in out and out["members"] == SUMMARY_MEMBERS + 1
    assert sum(int(k) * v for k, v in out["load_histogram"].items()) == 2001


def test_moved_lower_bound_is_null_where_unknown(tmp_path, capsys):
    # different subscriptions, range: unbalanced, so the engine knows no bound
    data = {"topics": {"a": 3, "b": 3}, "members": {"C0": ["a", "b"], "C1": ["a"], "C2": ["b"]}}
    run = run_cli(capsys, "assign", write_group(tmp_path, data), "--format", "json")
    out = json.loads(run.out)
    bounds = {s: out[s]["metrics"]["moved_lower_bound"] for s in STRATEGIES}
    assert None in bounds.values() and all(b is None or b >= 0 for b in bounds.values())
    table = run_cli(capsys, "assign", write_group(tmp_path, data))
    assert "unknown" in table.out and " -1 " not in table.out


def test_moved_is_labelled_with_what_it_counts(tmp_path, capsys):
    # C2 left the group: its partitions t-4, t-5 are nobody's claim here, so they are not counted as moved
    data = {"topics": {"t": 6}, "members": {"C0": {"topics": ["t"], "owned": [["t", 0], ["t", 1]], "generation": 2},
                                            "C1": {"topics": ["t"], "owned": [["t", 2], ["t", 3]], "generation": 2}}}
    run = run_cli(capsys, "assign", write_group(tmp_path, data), "--strategy", "sticky")
    assert ("moved counts the 4 of 6 subscribed partitions that had a previous owner here; the other 2 are "
            "assigned without counting as moved.") in run.out
    assert "one of a member no longer in the group) is not counted" in run.out


# ---------------------------------------------------------------------------------------------
# over time: the output fed back as the next input; moves checked by an independent tracker


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_feeding_the_result_back_is_stable(tmp_path, capsys, strategy):
    rng = random.Random(7)
    topics = {f"t{i}": rng.randint(1, 12) for i in range(4)}
    members = {f"C{i}": {"topics": sorted(rng.sample(sorted(topics), rng.randint(1, 4)))} for i in range(6)}
    data = {"topics": topics, "members": members}
    moved = []
    for generation in range(1, 5):
        run = run_cli(capsys, "assign", write_group(tmp_path, data), "--strategy", strategy, "--format", "json")
        assert run.code == 0 and run.err == ""
        result = json.loads(run.out)[strategy]
        moved.append(result["metrics"]["moved"])
        data = {"topics": topics, "members": {
            m: {"topics": spec["topics"], "owned_partitions": result["assignment"][m], "generation_id": generation}
            for m, spec in members.items()}}
    assert moved[-1] == moved[-2] == 0      # cooperative-sticky: withhold, hand over, then a fixed point


def random_claims_group(rng: random.Random) -> dict:
    topics = {f"t{i}": rng.randint(0, 8) for i in range(rng.randint(1, 4))}
    members = {}
    for i in range(rng.randint(1, 7)):
        subs = rng.sample(sorted(topics), rng.randint(0, len(topics)))
        claims = {(t, p) for t in topics for p in range(topics[t]) if rng.random() < 0.3}
        members[f"M{i}"] = {"topics": subs, "owned": [list(c) for c in sorted(claims)], "generation": rng.randint(1, 3)}
    return {"topics": topics, "members": members}


def test_previous_owners_agree_with_the_engines_moved_count():
    """plots.member_moves counts each member's lost partitions from GroupFile.previous_owner (Python, the
    rule as documented); their sum must be the engine's `moved` for every strategy."""
    from kafkagroup.plots import member_moves

    rng = random.Random(11)
    for _ in range(300):
        group = parse_group(random_claims_group(rng))
        for strategy in STRATEGIES:
            if strategy == "server-uniform":   # these groups claim partitions twice: refused (test_server_assignors)
                continue
            result = kafkagroup.assign(strategy, group.topics, group.members)
            moves = member_moves(group, result)
            assert int(moves["lost"].sum()) == result.metrics.moved, (strategy, group.members)
            assert (moves["kept"] + moves["gained"] == moves["after"]).all()


# ---------------------------------------------------------------------------------------------
# garbage in: never a traceback

json_scalars = st.one_of(st.none(), st.booleans(), st.text(max_size=4),
                         st.integers(-3, 12), st.sampled_from([2**31 - 1, 2**31, -2**31, MAX_FILE_PARTITIONS + 1]))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)), max_leaves=12)
member_spec = st.one_of(json_values, st.fixed_dictionaries(
    {"topics": st.one_of(json_values, st.lists(st.sampled_from(["a", "b", "c"]), max_size=3))},
    optional={"owned": st.one_of(json_values, st.lists(st.tuples(st.sampled_from(["a", "b", "z"]),
                                                                  st.integers(-1, 6)).map(list), max_size=4)),
              "generation": json_values, "rack": json_values, "instance": st.sampled_from(["i", "j", None]),
              "topic": json_values}))
group_files = st.one_of(json_values, st.fixed_dictionaries({
    "topics": st.one_of(json_values, st.dictionaries(st.sampled_from(["a", "b", "c"]), json_scalars, max_size=3)),
    "members": st.one_of(json_values, st.dictionaries(st.text(max_size=3), member_spec, max_size=4))}))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(group_files)
def test_garbage_group_files_never_show_a_traceback(tmp_path, capsys, data):
    run = run_cli(capsys, "assign", write_group(tmp_path, data), "--format", "json")
    assert run.code in (0, 2)
    assert all(line.startswith("kafkagroup: ") for line in run.err_lines)
    if run.code == 2:
        assert len(run.err_lines) - sum("warning:" in line for line in run.err_lines) == 1
    else:
        assert set(json.loads(run.out)) == set(STRATEGIES)


def test_partition_claimed_twice_skips_only_server_uniform(tmp_path, capsys):
    """A classic group may hold a partition claimed by two members (the tie voids both claims); server-uniform's
    input is a previous target assignment, which cannot: with every strategy it is skipped with a warning
    naming the members, asked for by name it is the error."""
    group = {"topics": {"t0": 4}, "members": {"A": {"topics": ["t0"], "owned": [["t0", 1]]},
                                              "B": {"topics": ["t0"], "owned": [["t0", 1]]}}}
    path = write_group(tmp_path, group)
    run = run_cli(capsys, "assign", path, "--format", "json")
    assert run.code == 0
    assert set(json.loads(run.out)) == set(STRATEGIES) - {"server-uniform"}
    assert (f"kafkagroup: warning: {path}: server-uniform skipped: members 'A' and 'B' both hold partition t0-1 "
            "in their previous target assignment (a partition has at most one owner)") in run.err_lines
    run = run_cli(capsys, "assign", path, "--strategy", "server-uniform")
    assert run.code == 2 and run.err_lines[-1].endswith("members 'A' and 'B' both hold partition t0-1 in their "
                                                        "previous target assignment (a partition has at most one owner)")
