"""KIP-415 incremental cooperative assignment, driven through simulated rebalance rounds.

A simulated cluster applies each plan as a worker does (stop what is revoked, start what is
assigned, rejoin at once after a revocation) and counts every start and stop, so the tests
can say what a user cares about: every task runs exactly once, unaffected tasks are never
stopped, a departed worker's tasks wait for the delay and then run elsewhere, the load ends
balanced.
"""

from __future__ import annotations

from collections import Counter

import pytest

from core.distributed.assignor import (
    Held,
    IncrementalCooperativeAssignor,
    MemberPlan,
    revoking_backoff_ms,
)

DELAY_MS = 10_000


def work(connectors: dict[str, int]) -> Held:
    return Held.of(connectors, [(c, t) for c, n in connectors.items() for t in range(n)])


class Cluster:
    """Members, their work, and the leader's assignor with a hand-moved clock."""

    def __init__(self, configured: Held, max_delay_ms: int = DELAY_MS) -> None:
        self.now = 1_000_000
        self.assignor = IncrementalCooperativeAssignor(max_delay_ms, lambda: self.now)
        self.configured = configured
        self.members: dict[str, Held] = {}
        self.generation = 0
        self.last_completed = -1
        self.starts: Counter[object] = Counter()
        self.stops: Counter[object] = Counter()
        self.last_plans: dict[str, MemberPlan] = {}

    def join(self, *names: str) -> None:
        for name in names:
            self.members[name] = Held()

    def crash(self, name: str) -> None:
        del self.members[name]  # its work is lost, not stopped by anyone

    def round(self) -> dict[str, MemberPlan]:
        self.generation += 1
        plans = self.assignor.assign(
            self.configured,
            dict(self.members),
            last_completed_generation=self.last_completed,
            generation=self.generation,
        )
        for member, plan in plans.items():
            held = self.members[member]
            for item in [*plan.revoked.connectors, *plan.revoked.tasks]:
                self.stops[item] += 1
            for item in [*plan.assigned.connectors, *plan.assigned.tasks]:
                self.starts[item] += 1
            self.members[member] = held.minus(plan.revoked).plus(plan.assigned)
        self.last_completed = self.generation
        self.last_plans = plans
        return plans

    def settle(self, max_rounds: int = 10) -> int:
        """Rebalance until a round revokes nothing (members that lost work rejoin at once)."""
        for rounds in range(1, max_rounds + 1):
            plans = self.round()
            if not any(p.revoked for p in plans.values()):
                return rounds
        raise AssertionError(f"no stable assignment after {max_rounds} rounds")

    def running(self) -> Counter[object]:
        counts: Counter[object] = Counter()
        for held in self.members.values():
            counts.update(held.connectors)
            counts.update(held.tasks)
        return counts

    def assert_each_runs_once(self) -> None:
        counts = self.running()
        expected = set(self.configured.connectors) | set(self.configured.tasks)
        assert set(counts) == expected
        assert all(n == 1 for n in counts.values()), counts

    def assert_balanced(self) -> None:
        tasks = [len(h.tasks) for h in self.members.values()]
        connectors = [len(h.connectors) for h in self.members.values()]
        assert max(tasks) - min(tasks) <= 1, tasks
        assert max(connectors) - min(connectors) <= 1, connectors


def test_first_assignment_runs_everything_once_and_balanced() -> None:
    cluster = Cluster(work({"a": 4, "b": 4, "c": 1}))
    cluster.join("w1", "w2", "w3")
    assert cluster.settle() == 1
    cluster.assert_each_runs_once()
    cluster.assert_balanced()
    assert not cluster.stops


def test_a_new_worker_gets_a_fair_share_and_only_moved_tasks_stop() -> None:
    cluster = Cluster(work({"a": 6, "b": 6}))
    cluster.join("w1", "w2")
    cluster.settle()
    before = {m: h for m, h in cluster.members.items()}
    cluster.join("w3")
    cluster.settle()
    cluster.assert_each_runs_once()
    cluster.assert_balanced()
    moved = [item for item, n in cluster.stops.items() if n]
    # Exactly what w3 now runs was stopped elsewhere; everything else never stopped.
    assert set(moved) == set(cluster.members["w3"].connectors) | set(cluster.members["w3"].tasks)
    for member in ("w1", "w2"):
        kept = before[member].minus(cluster.members["w3"])
        assert kept.within(cluster.members[member]) == kept


def test_a_crashed_workers_tasks_wait_for_the_delay_then_move_without_stopping_others() -> None:
    cluster = Cluster(work({"a": 6, "b": 3}))
    cluster.join("w1", "w2", "w3")
    cluster.settle()
    lost = cluster.members["w3"]
    survivors = {m: cluster.members[m] for m in ("w1", "w2")}
    stops_before = sum(cluster.stops.values())
    cluster.crash("w3")

    plans = cluster.round()
    assert all(p.delay_ms == DELAY_MS for p in plans.values())
    assert not any(p.assigned or p.revoked for p in plans.values())  # nothing moves yet

    cluster.now += DELAY_MS - 1
    plans = cluster.round()
    assert all(0 < p.delay_ms <= 1 for p in plans.values())
    assert not any(p.assigned for p in plans.values())

    cluster.now += 1
    cluster.settle()
    cluster.assert_each_runs_once()
    cluster.assert_balanced()
    assert sum(cluster.stops.values()) == stops_before  # no surviving task was ever stopped
    for member, held in survivors.items():
        assert held.within(cluster.members[member]) == held
    moved = set(lost.connectors) | set(lost.tasks)
    assert all(cluster.starts[item] == 2 for item in moved)


def test_a_replacement_worker_joining_during_the_delay_takes_the_lost_work() -> None:
    cluster = Cluster(work({"a": 4, "b": 2}))
    cluster.join("w1", "w2", "w3")
    cluster.settle()
    lost = cluster.members["w3"]
    cluster.crash("w3")
    cluster.round()
    cluster.join("w3-new")  # the bounced worker, with a new member id, and empty
    plans = cluster.round()
    assert not plans["w3-new"].assigned  # still waiting for the delay
    cluster.now += DELAY_MS
    cluster.settle()
    assert cluster.members["w3-new"] == lost
    cluster.assert_each_runs_once()
    assert not cluster.stops


def test_without_a_delay_lost_work_moves_at_once() -> None:
    cluster = Cluster(work({"a": 3}), max_delay_ms=0)
    cluster.join("w1", "w2", "w3")
    cluster.settle()
    cluster.crash("w2")
    plans = cluster.round()
    assert all(p.delay_ms == 0 for p in plans.values())
    cluster.settle()
    cluster.assert_each_runs_once()
    cluster.assert_balanced()


def test_work_missing_while_every_member_is_still_there_is_reassigned_at_once() -> None:
    cluster = Cluster(work({"a": 2}))
    cluster.join("w1", "w2")
    cluster.settle()
    victim = next(m for m, h in cluster.members.items() if h.tasks)
    cluster.members[victim] = Held()  # it missed its assignment (a failed sync)
    cluster.settle()
    cluster.assert_each_runs_once()


def test_deleted_connectors_and_tasks_are_revoked_from_their_workers() -> None:
    cluster = Cluster(work({"a": 3, "b": 3}))
    cluster.join("w1", "w2")
    cluster.settle()
    cluster.configured = work({"a": 1})
    cluster.settle()
    cluster.assert_each_runs_once()
    for item in ["b", ("b", 0), ("b", 1), ("b", 2), ("a", 1), ("a", 2)]:
        assert cluster.stops[item] == 1


def test_a_new_leader_without_memory_moves_nothing_that_runs() -> None:
    cluster = Cluster(work({"a": 4, "b": 2}))
    cluster.join("w1", "w2", "w3")
    cluster.settle()
    cluster.assignor = IncrementalCooperativeAssignor(DELAY_MS, lambda: cluster.now)
    cluster.configured = work({"a": 4, "b": 2, "c": 1})
    cluster.settle()
    cluster.assert_each_runs_once()
    assert not cluster.stops
    assert cluster.starts["c"] == 1 and cluster.starts[("c", 0)] == 1


def test_duplicated_work_is_revoked_everywhere_then_runs_once() -> None:
    cluster = Cluster(work({"a": 2}))
    cluster.join("w1", "w2")
    cluster.settle()
    owner = next(m for m, h in cluster.members.items() if ("a", 0) in h.tasks)
    other = "w2" if owner == "w1" else "w1"
    cluster.members[other] = cluster.members[other].plus(Held.of(tasks=[("a", 0)]))
    cluster.settle()
    cluster.assert_each_runs_once()
    assert cluster.stops[("a", 0)] == 2


def test_consecutive_revoking_rounds_back_off_exponentially() -> None:
    assert [revoking_backoff_ms(n, 300_000) for n in (1, 2, 3, 4)] == [40, 1_600, 64_000, 300_000]
    assert revoking_backoff_ms(3, 0) == 0


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_balance_holds_for_any_number_of_workers(workers: int) -> None:
    cluster = Cluster(work({f"c{i}": i + 1 for i in range(7)}))
    cluster.join(*(f"w{i}" for i in range(workers)))
    cluster.settle()
    cluster.join("late")
    cluster.settle()
    cluster.assert_each_runs_once()
    cluster.assert_balanced()
