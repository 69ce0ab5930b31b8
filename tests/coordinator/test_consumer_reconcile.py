"""The pure reconciliation step of KIP-848 (coordinator/consumer/reconcile.py), rule by rule, then a
seeded property: members reconciling in any order towards moving targets never both own a partition, and
every member reaches its target once the target stops moving (Kafka's CurrentAssignmentBuilderTest states
the single steps; the property is KIP-848's safety claim)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkagroup.coordinator.consumer.reconcile import MemberAssignment, MemberState, reconcile

S, UNREV, UNREL = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS
FREE = lambda t, p: -1  # noqa: E731


def fs(*ps: int) -> frozenset[int]:
    return frozenset(ps)


def at(epoch: int, assigned: dict, state: MemberState = S, pending: dict | None = None) -> MemberAssignment:
    return MemberAssignment(state, epoch, epoch - 1, assigned, pending or {})


def test_joining_member_gets_free_target_partitions_at_the_target_epoch():
    nxt = reconcile(MemberAssignment.joining(), 5, {"a": fs(0, 1), "b": fs(2)}, {"a", "b"}, FREE, owned=[])
    assert (nxt.state, nxt.member_epoch, nxt.previous_member_epoch) == (S, 5, 0)
    assert nxt.assigned == {"a": fs(0, 1), "b": fs(2)} and not nxt.pending_revocation


def test_stable_member_at_the_target_epoch_is_returned_unchanged():
    m = at(5, {"a": fs(0)})
    assert reconcile(m, 5, {"a": fs(0, 1)}, {"a"}, FREE, owned=[("a", [0])]) is m


def test_revoke_before_assign_the_member_keeps_its_epoch_until_it_acknowledges():
    m = at(3, {"a": fs(0, 1)})
    step = reconcile(m, 4, {"a": fs(0), "b": fs(7)}, {"a", "b"}, FREE, owned=[("a", [0, 1])])
    # b-7 is free but not given yet: partitions are revoked before new ones are assigned
    assert (step.state, step.member_epoch) == (UNREV, 3)
    assert step.assigned == {"a": fs(0)} and step.pending_revocation == {"a": fs(1)}
    # still reporting a-1: no progress
    assert reconcile(step, 4, {"a": fs(0), "b": fs(7)}, {"a", "b"}, FREE, owned=[("a", [0, 1])]) is step
    # owned omitted (None): assumed still owned, as Kafka does
    assert reconcile(step, 4, {"a": fs(0), "b": fs(7)}, {"a", "b"}, FREE, owned=None) is step
    done = reconcile(step, 4, {"a": fs(0), "b": fs(7)}, {"a", "b"}, FREE, owned=[("a", [0])])
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (S, 4, 3)
    assert done.assigned == {"a": fs(0), "b": fs(7)} and not done.pending_revocation


def test_revocation_already_done_by_the_client_moves_straight_to_the_target():
    m = at(3, {"a": fs(0, 1)})
    nxt = reconcile(m, 4, {"a": fs(1)}, {"a"}, FREE, owned=[("a", [1])])
    assert (nxt.state, nxt.member_epoch, nxt.assigned) == (S, 4, {"a": fs(1)})


def test_partition_still_held_by_another_member_is_unreleased_and_given_once_free():
    held = {("a", 2): 3}
    epoch = lambda t, p: held.get((t, p), -1)  # noqa: E731
    m = at(3, {"a": fs(0)})
    step = reconcile(m, 4, {"a": fs(0, 2)}, {"a"}, epoch, owned=[("a", [0])])
    assert (step.state, step.member_epoch, step.assigned) == (UNREL, 4, {"a": fs(0)})
    again = reconcile(step, 4, {"a": fs(0, 2)}, {"a"}, epoch, owned=[("a", [0])])
    assert again.assigned == {"a": fs(0)} and again.state is UNREL
    held.clear()
    final = reconcile(again, 4, {"a": fs(0, 2)}, {"a"}, epoch, owned=[("a", [0])])
    assert (final.state, final.assigned) == (S, {"a": fs(0, 2)})


def test_a_partition_the_member_is_revoking_itself_is_not_unreleased():
    # the member moved a-1 to pending revocation, then the target gives a-1 back to it
    m = MemberAssignment(UNREV, 3, 2, {"a": fs(0)}, {"a": fs(1)})
    epochs = {("a", 1): 3}
    nxt = reconcile(m, 5, {"a": fs(0, 1)}, {"a"}, lambda t, p: epochs.get((t, p), -1), owned=[("a", [0])])
    assert (nxt.state, nxt.assigned) == (S, {"a": fs(0, 1)})


def test_topic_no_longer_subscribed_is_revoked_even_if_the_target_still_names_it():
    m = at(3, {"a": fs(0), "b": fs(1)})
    nxt = reconcile(m, 4, {"a": fs(0), "b": fs(1)}, {"a"}, FREE, owned=[("a", [0]), ("b", [1])])
    assert (nxt.state, nxt.assigned, nxt.pending_revocation) == (UNREV, {"a": fs(0)}, {"b": fs(1)})


def test_unreleased_member_picks_up_partitions_on_later_heartbeats_at_the_same_epoch():
    m = MemberAssignment(UNREL, 4, 3, {"a": fs(0)}, {})
    nxt = reconcile(m, 4, {"a": fs(0, 1)}, {"a"}, FREE, owned=[("a", [0])])
    assert (nxt.state, nxt.member_epoch, nxt.assigned) == (S, 4, {"a": fs(0, 1)})


# ---------------------------------------------------------------- property: never two owners

@settings(max_examples=150, deadline=None)
@given(st.data())
def test_members_never_both_own_a_partition_and_converge(data):
    members = ["m0", "m1", "m2"]
    partitions = list(range(6))
    state = {m: MemberAssignment.joining() for m in members}
    client_owned = {m: set() for m in members}       # what each client believes it owns (its callbacks)
    epoch = 0

    def partition_epoch(topic, p):
        for m, a in state.items():
            if p in a.assigned.get(topic, ()) or p in a.pending_revocation.get(topic, ()):
                return a.member_epoch
        return -1

    def new_target():
        owners = data.draw(st.lists(st.sampled_from(members), min_size=len(partitions), max_size=len(partitions)))
        return {m: {"t": frozenset(p for p, o in zip(partitions, owners) if o == m)} for m in members}

    target = new_target()
    epoch += 1
    for _ in range(data.draw(st.integers(5, 40))):
        if data.draw(st.integers(0, 5)) == 0:
            target, epoch = new_target(), epoch + 1
        m = data.draw(st.sampled_from(members))
        # the client revokes what it was told to drop before heartbeating (the callback runs first)
        nxt = reconcile(state[m], epoch, target[m], {"t"}, partition_epoch, owned=[("t", sorted(client_owned[m]))])
        state[m] = nxt
        client_owned[m] = set(nxt.assigned.get("t", ()))
        seen: dict[int, str] = {}
        for other, owned in client_owned.items():
            for p in owned:
                assert p not in seen, f"partition {p} owned by {seen[p]} and {other}"
                seen[p] = other
    for _ in range(4):          # the target stops moving: a few rounds of heartbeats converge
        for m in members:
            state[m] = reconcile(state[m], epoch, target[m], {"t"}, partition_epoch,
                                 owned=[("t", sorted(client_owned[m]))])
            client_owned[m] = set(state[m].assigned.get("t", ()))
    for m in members:
        assert state[m].state is S and state[m].member_epoch == epoch
        assert state[m].assigned.get("t", frozenset()) == target[m]["t"]
