"""``kafkagroup ctl``: steer a ``kafkagroup serve --control HOST:PORT`` node from a shell or a script.

    kafkagroup ctl --control 127.0.0.1:9100 groups                     # every group, its members
    kafkagroup ctl --control 127.0.0.1:9100 wait billing --members 3    # until Stable with 3 members
    kafkagroup ctl --control 127.0.0.1:9100 expire billing MEMBER_ID
    kafkagroup ctl --control 127.0.0.1:9100 error Heartbeat REBALANCE_IN_PROGRESS --count 2
    kafkagroup ctl --control 127.0.0.1:9100 delay Fetch 500
    kafkagroup ctl --control 127.0.0.1:9100 drop OffsetCommit --client-id app-1
    kafkagroup ctl --control 127.0.0.1:9100 clear

``--control`` defaults to $KAFKAGROUP_CONTROL. ``--json`` prints the answer as JSON. Exit codes: 0 done,
1 ``wait`` timed out (or ``expire`` found no such member), 2 a mistake (unknown API or error name, the
endpoint unreachable).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

HELP = "observe and steer a kafkagroup serve --control node: groups, wait, expire, inject errors/delays"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Observe and steer a node started with kafkagroup serve --control HOST:PORT "
                          "(kafkagroup.testing's control endpoint).")
    parser.epilog = "examples:\n" + "\n".join(line for line in (__doc__ or "").splitlines()
                                             if line.startswith("    kafkagroup ctl"))
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--control", default=os.environ.get("KAFKAGROUP_CONTROL"), metavar="HOST:PORT",
                        help="the node's control address (serve --control; default $KAFKAGROUP_CONTROL)")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    sub = parser.add_subparsers(dest="action", required=True, help="what to do (each has --help)")
    sub.add_parser("groups", help="every group: state, generation, members and their assignments")
    p = sub.add_parser("group", help="one group")
    p.add_argument("group")
    p = sub.add_parser("wait", help="wait until a group is in a state (default Stable) with N members")
    p.add_argument("group")
    p.add_argument("--state", default="Stable", help="Empty, PreparingRebalance, CompletingRebalance, Stable, Dead")
    p.add_argument("--members", type=int, default=None, metavar="N", help="member count to wait for")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="give up after (default 30)")
    p = sub.add_parser("expire", help="expire a member's session now (the group rebalances without it)")
    p.add_argument("group")
    p.add_argument("member")
    for name, what in (("error", "answer the next requests of API with an error code, unhandled"),
                       ("delay", "delay the answers to the next requests of API"),
                       ("drop", "handle the next requests of API and never answer them")):
        p = sub.add_parser(name, help=what)
        p.add_argument("api", help="Kafka API name (JoinGroup, Heartbeat, OffsetCommit, Fetch, ...)")
        if name == "error":
            p.add_argument("error", help="Kafka error name (NOT_COORDINATOR, ...) or number")
        if name == "delay":
            p.add_argument("ms", type=int, help="milliseconds")
        p.add_argument("--count", type=int, default=1, help="how many requests (default 1; 0: until cleared)")
        p.add_argument("--client-id", default=None, help="only this client's requests")
    sub.add_parser("faults", help="the fault rules in force")
    sub.add_parser("clear", help="clear every fault rule")


def _print_groups(views: list[Any]) -> None:
    if not views:
        print("no groups")
    for g in views:
        generation = "-" if g.generation is None else g.generation
        print(f"{g.group_id}  {g.state}  generation {generation}  protocol {g.protocol or '-'}  "
              f"{len(g.members)} member(s)")
        for m in g.members:
            owned = "" if m.assignment is None else "  " + "  ".join(
                f"{t}: {','.join(map(str, p))}" for t, p in m.assignment.items())
            static = f" ({m.group_instance_id})" if m.group_instance_id else ""
            print(f"  {m.member_id}{static}  {m.client_id}  {m.client_host}{owned}")


def run(args: argparse.Namespace) -> int:
    from kafkagroup.testing.control import ControlClient, ControlError

    if not args.control:
        raise SystemExit("kafkagroup ctl: give --control HOST:PORT (serve --control's address) or set "
                         "KAFKAGROUP_CONTROL")
    client = ControlClient(args.control)
    try:
        return _run(client, args)
    except TimeoutError as e:
        print(f"kafkagroup ctl: {e}", file=sys.stderr)
        return 1
    except (ControlError, ValueError) as e:
        raise SystemExit(f"kafkagroup ctl: {e}") from None
    except OSError as e:        # URLError: nothing listening, refused, unreachable
        raise SystemExit(f"kafkagroup ctl: cannot reach {client.url}: {getattr(e, 'reason', e)}") from None


def _run(client: Any, args: argparse.Namespace) -> int:
    action = args.action
    count = None if getattr(args, "count", 1) == 0 else getattr(args, "count", 1)
    if action in ("groups", "group", "wait"):
        if action == "groups":
            views = client.groups()
        elif action == "group":
            found = client.group(args.group)
            views = [] if found is None else [found]
            if found is None and not args.json:
                print(f"no group {args.group!r}")
                return 1
        else:
            views = [client.wait(args.group, args.state, args.members, args.timeout)]
        if args.json:
            out: Any = [v.to_dict() for v in views]
            print(json.dumps(out if action == "groups" else (out[0] if out else None), indent=2))
        else:
            _print_groups(views)
        return 0
    if action == "expire":
        expired = client.expire(args.group, args.member)
        print(json.dumps({"expired": expired}) if args.json else
              (f"expired {args.member} of {args.group}" if expired else f"no member {args.member!r} in {args.group!r}"))
        return 0 if expired else 1
    if action == "error":
        rule = client.inject_error(args.api, args.error, count=count, client_id=args.client_id)
    elif action == "delay":
        rule = client.delay(args.api, args.ms, count=count, client_id=args.client_id)
    elif action == "drop":
        rule = client.drop(args.api, count=count, client_id=args.client_id)
    elif action == "faults":
        rules = client.faults()
        print(json.dumps(rules, indent=2) if args.json else ("\n".join(map(str, rules)) or "no faults"))
        return 0
    else:
        client.clear_faults()
        print(json.dumps({"cleared": True}) if args.json else "faults cleared")
        return 0
    print(json.dumps(rule) if args.json else f"fault added: {rule}")
    return 0
