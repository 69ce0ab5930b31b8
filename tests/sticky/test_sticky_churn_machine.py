"""A hypothesis state machine of group churn (join, leave, subscription change, partitions added, stale
generation), every step assigned natively and by the pure-Python reference; invariants checked after
each step: validity, optimal load vector (same as the reference's), minimal moved (same as the
reference's), the certificate's fields, and cooperative rounds converging."""
from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sticky_support import check_matches_reference, check_valid, Group, run

MAX_TOPICS = 4


class StickyChurn(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.counts = [2, 3]
        self.subs: list[set[int]] = [{0, 1}]
        self.owned: list[list[int]] = [[]]
        self.generation = [-1]
        self.gen = 0
        self.last = None

    def group(self) -> Group:
        return Group(list(self.counts), [set(s) for s in self.subs], [list(o) for o in self.owned], list(self.generation))

    def _rebalance(self, strategy: str = "sticky") -> None:
        g = self.group()
        r = run(strategy, g)
        self.gen += 1
        owner = r.owner.tolist()
        self.owned = [[p for p, m in enumerate(owner) if m == i] for i in range(len(self.subs))]
        self.generation = [self.gen] * len(self.subs)
        self.last = (g, r)

    @rule(topics=st.sets(st.integers(0, MAX_TOPICS - 1), max_size=MAX_TOPICS))
    @precondition(lambda self: len(self.subs) < 7)
    def join(self, topics):
        self.subs.append({t for t in topics if t < len(self.counts)})
        self.owned.append([])
        self.generation.append(-1)
        self._rebalance()

    @rule(data=st.data())
    @precondition(lambda self: len(self.subs) > 1)
    def leave(self, data):
        i = data.draw(st.integers(0, len(self.subs) - 1))
        for lst in (self.subs, self.owned, self.generation):
            del lst[i]
        self._rebalance()

    @rule(data=st.data())
    def change_subscription(self, data):
        i = data.draw(st.integers(0, len(self.subs) - 1))
        self.subs[i] = set(data.draw(st.sets(st.integers(0, len(self.counts) - 1))))
        self._rebalance()

    @rule(data=st.data())
    @precondition(lambda self: sum(self.counts) < 14)
    def add_partitions(self, data):
        # partitions are appended to a topic: global ids of later topics shift, so remap the claims
        t = data.draw(st.integers(0, len(self.counts) - 1))
        base = sum(self.counts[: t + 1])
        self.counts[t] += 1
        self.owned = [[p + 1 if p >= base else p for p in o] for o in self.owned]
        self._rebalance()

    @rule()
    @precondition(lambda self: len(self.counts) < MAX_TOPICS and sum(self.counts) < 13)
    def add_topic(self):
        self.counts.append(1)
        self._rebalance()

    @rule(data=st.data())
    def stale_member(self, data):
        # one member comes back with an old generation and claims someone else's partitions too
        i = data.draw(st.integers(0, len(self.subs) - 1))
        P = sum(self.counts)
        if P:
            extra = data.draw(st.lists(st.integers(0, P - 1), max_size=3))
            self.owned[i] = sorted(set(self.owned[i]) | set(extra))
        self.generation[i] = self.gen - 1
        self._rebalance()

    @rule()
    def cooperative_round(self):
        # cooperative: the round withholds transfers; after revocation the follow-up withholds nothing
        g = self.group()
        r = run("cooperative-sticky", g)
        check_valid(r.owner, g, r.withheld)
        owner = r.owner.tolist()
        self.gen += 1
        self.owned = [[p for p, m in enumerate(owner) if m == i] for i in range(len(self.subs))]
        self.generation = [self.gen] * len(self.subs)
        r2 = run("cooperative-sticky", self.group())
        assert r2.withheld.tolist() == []
        self._rebalance()

    @invariant()
    def certified_optimal(self):
        if self.last is None:
            return
        g, r = self.last
        check_matches_reference(r, g)
        if r.metrics.moved_lower_bound >= 0:
            assert r.metrics.moved_lower_bound <= r.metrics.moved
        if len({frozenset(s) for s in g.subs}) == 1:
            assert r.metrics.moved == r.metrics.moved_lower_bound


TestStickyChurn = StickyChurn.TestCase
TestStickyChurn.settings = settings(max_examples=60, stateful_step_count=12, deadline=None,
                                    suppress_health_check=[HealthCheck.too_slow])
