"""Incremental cooperative assignment of connectors and tasks (KIP-415), run by the leader.

Pure logic, no I/O: the leader's membership calls :meth:`IncrementalCooperativeAssignor.assign`
with what is configured (from the config snapshot) and what every member says it runs (from
its join metadata), and gets back, per member, what to **start** and what to **revoke**.
Nothing else moves: a worker keeps running everything that is neither revoked from it nor
deleted, through any number of rebalances. The rules, as Kafka's IncrementalCooperativeAssignor:

* **Deleted** work (in the previous assignment, no longer configured) and **duplicated** work
  (reported by two members) is revoked.
* **Lost** work (in the previous assignment, now reported by nobody: its worker left) waits up
  to ``scheduled.rebalance.max.delay.ms`` for the worker to come back, rather than moving at
  once: a bounced worker gets its own work back. Members are told the remaining delay and
  rejoin when it ends; then the lost work is given to workers that joined empty meanwhile (the
  replacement), or spread like new work. With the delay at 0, or when no member is missing
  (a member only failed to receive its previous assignment), lost work is reassigned at once.
* **New** work goes to the least loaded workers, connectors and tasks balanced separately.
* **Load balancing**: when counts differ by more than one between workers (a new worker joined
  empty), the excess is revoked from the most loaded, to be assigned in the next round (the
  members that lost work rejoin at once). Two revoking rounds in a row back off exponentially
  (40 ms, 1.6 s, 64 s, capped by the maximum delay), so that revocations cannot loop.

After the follow-up rounds settle, ``max - min <= 1`` tasks (and connectors) per worker.

A member id that left and came back is a new member to the group (the coordinator hands out
ids); the assignor works on member ids, the herder on what each member reports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = [
    "IncrementalCooperativeAssignor",
    "MemberPlan",
    "Held",
    "TaskId",
    "revoking_backoff_ms",
]

log = logging.getLogger("copycat.distributed.assignor")

TaskId = tuple[str, int]
T = TypeVar("T")

# Kafka's backoff between consecutive revoking rebalances: 1 ms times 40 to the number of
# rounds in a row (40 ms, 1.6 s, 64 s), capped by scheduled.rebalance.max.delay.ms.
REVOKING_BACKOFF_INITIAL_MS = 1
REVOKING_BACKOFF_MULTIPLIER = 40


def revoking_backoff_ms(rounds: int, max_delay_ms: int) -> int:
    if max_delay_ms == 0:
        return 0
    return int(min(REVOKING_BACKOFF_INITIAL_MS * REVOKING_BACKOFF_MULTIPLIER**rounds, max_delay_ms))


@dataclass(frozen=True)
class Held:
    """Connectors and tasks, as one member reports them or one plan lists them."""

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[TaskId] = frozenset()

    @classmethod
    def of(cls, connectors: Iterable[str] = (), tasks: Iterable[TaskId] = ()) -> Held:
        return cls(frozenset(connectors), frozenset(tasks))

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    def minus(self, *others: Held) -> Held:
        connectors, tasks = set(self.connectors), set(self.tasks)
        for other in others:
            connectors -= other.connectors
            tasks -= other.tasks
        return Held.of(connectors, tasks)

    def plus(self, other: Held) -> Held:
        return Held(self.connectors | other.connectors, self.tasks | other.tasks)

    def within(self, other: Held) -> Held:
        return Held(self.connectors & other.connectors, self.tasks & other.tasks)


@dataclass(frozen=True)
class MemberPlan:
    """What one member is told: start these, stop those, and rejoin after ``delay_ms``."""

    assigned: Held
    revoked: Held
    delay_ms: int
    # Everything the member runs once it applied the plan (for diagnostics and tests).
    total: Held


@dataclass
class _Load:
    member: str
    connectors: list[str] = field(default_factory=list)
    tasks: list[TaskId] = field(default_factory=list)

    def held(self) -> Held:
        return Held.of(self.connectors, self.tasks)

    def drop(self, held: Held) -> None:
        self.connectors = [c for c in self.connectors if c not in held.connectors]
        self.tasks = [t for t in self.tasks if t not in held.tasks]


class IncrementalCooperativeAssignor:
    """The leader's assignor; its memory of the previous round lives as long as the leader.

    Args:
        max_delay_ms: ``scheduled.rebalance.max.delay.ms``.
        clock_ms: Wall-clock milliseconds (injected for tests).
    """

    def __init__(self, max_delay_ms: int, clock_ms: Callable[[], int]) -> None:
        self.max_delay_ms = max_delay_ms
        self._clock_ms = clock_ms
        self._previous = Held()
        self._previous_revocation = Held()
        self._previous_generation = -1
        self._previous_members: frozenset[str] = frozenset()
        self._revoked_in_previous = False
        self._revoking_rounds = 0
        self._candidates: list[str] = []  # members that joined empty during a delay
        self.scheduled_rebalance_ms = 0
        self.delay_ms = 0

    def assign(
        self,
        configured: Held,
        members: Mapping[str, Held],
        *,
        last_completed_generation: int,
        generation: int,
    ) -> dict[str, MemberPlan]:
        """One rebalance round: a plan per member (see the module docstring)."""
        if self._previous_generation != last_completed_generation:
            # The previous round's assignment never completed (a member failed to sync, or
            # another worker led it): what the members report now is the truth.
            self._previous = Held()
        active = Held()
        for held in members.values():
            active = active.plus(held)
        if self._previous_revocation:
            if self._previous_revocation.within(active):
                self._previous = active  # a revocation did not take effect: start over
            self._previous_revocation = Held()

        # Work nobody should run any more: also what a member reports that is not configured
        # (a leader that just took over has no previous assignment to compare with).
        deleted = self._previous.plus(active).minus(configured)
        duplicated = _duplicated(members)
        lost = self._previous.minus(active, deleted)
        created = configured.minus(self._previous, active)

        revoke: dict[str, Held] = {m: Held() for m in members}
        loads = {m: _Load(m, sorted(h.connectors), sorted(h.tasks)) for m, h in members.items()}
        for member, held in members.items():
            # Duplicated work is revoked everywhere; nobody reports it in the next round, so
            # it is assigned there as new work (Kafka's way: two quick rounds).
            gone = held.within(deleted.plus(duplicated))
            if gone:
                revoke[member] = revoke[member].plus(gone)
                loads[member].drop(gone)

        before = {m: load.held() for m, load in loads.items()}
        reassign = self._handle_lost(lost, loads)

        if self.delay_ms == 0:
            balancing = self._balancing_revocations(configured, loads)
            if balancing and self._revoked_in_previous:
                self._revoking_rounds += 1
                self.delay_ms = revoking_backoff_ms(self._revoking_rounds, self.max_delay_ms)
                if self.delay_ms:
                    self.scheduled_rebalance_ms = self._clock_ms() + self.delay_ms
                    log.info(
                        "revoking rebalances in a row; next load balancing in %d ms",
                        self.delay_ms,
                    )
                    balancing = {}
            elif balancing:
                self._revoked_in_previous = True
            elif self._revoked_in_previous:
                self._revoked_in_previous = False  # the load has converged
                self._revoking_rounds = 0
            for member, held in balancing.items():
                revoke[member] = revoke[member].plus(held)
                loads[member].drop(held)
        else:
            self._revoked_in_previous = False

        to_assign = created.plus(reassign)
        ordered = [loads[m] for m in sorted(loads)]
        _spread(ordered, sorted(to_assign.connectors), _connectors)
        _spread(ordered, sorted(to_assign.tasks), _tasks)

        plans: dict[str, MemberPlan] = {}
        next_previous = Held()
        for member, load in loads.items():
            total = load.held()
            next_previous = next_previous.plus(total)
            plans[member] = MemberPlan(
                assigned=total.minus(before[member]),
                revoked=revoke[member],
                delay_ms=self.delay_ms,
                total=total,
            )
        all_revoked = Held()
        for held in revoke.values():
            all_revoked = all_revoked.plus(held)
        self._previous_revocation = all_revoked
        # Lost work waiting for its worker counts as assigned: it must not look "created".
        self._previous = next_previous.minus(all_revoked).plus(lost.minus(reassign))
        self._previous_generation = generation
        self._previous_members = frozenset(members)
        return plans

    # -- lost work ---------------------------------------------------------------------------

    def _handle_lost(self, lost: Held, loads: Mapping[str, _Load]) -> Held:
        """Lost work to reassign now (the rest waits); may assign it to candidates itself."""
        if not lost and not self._revoked_in_previous:
            self._reset_delay()
            return Held()
        now = self._clock_ms()
        if self.scheduled_rebalance_ms <= 0 and self._previous_members <= set(loads):
            # Nobody left: members only missed their previous assignment.
            return lost
        if self.max_delay_ms == 0:
            return lost
        if 0 < self.scheduled_rebalance_ms <= now:
            candidates = [loads[m] for m in self._candidates if m in loads]
            self._reset_delay()
            self._revoked_in_previous = False
            if not candidates:
                return lost
            _round_robin(candidates, sorted(lost.connectors), _connectors)
            _round_robin(candidates, sorted(lost.tasks), _tasks)
            return Held()
        for member in sorted(loads):
            if not loads[member].connectors and not loads[member].tasks:
                if member not in self._candidates:
                    self._candidates.append(member)
        if now < self.scheduled_rebalance_ms:
            self.delay_ms = min(self.scheduled_rebalance_ms - now, self.max_delay_ms)
        else:
            self.delay_ms = self.max_delay_ms
            log.info(
                "work of departed workers held for %d ms (scheduled.rebalance.max.delay.ms): %s",
                self.delay_ms,
                _describe(lost),
            )
        self.scheduled_rebalance_ms = now + self.delay_ms
        return Held()

    def _reset_delay(self) -> None:
        self._candidates.clear()
        self.scheduled_rebalance_ms = 0
        self.delay_ms = 0

    # -- load balancing -----------------------------------------------------------------------

    def _balancing_revocations(
        self, configured: Held, loads: Mapping[str, _Load]
    ) -> dict[str, Held]:
        if not configured or all(not lo.connectors and not lo.tasks for lo in loads.values()):
            return {}
        members = sorted(loads)
        connectors = _excess({m: loads[m].connectors for m in members}, len(configured.connectors))
        tasks = _excess({m: loads[m].tasks for m in members}, len(configured.tasks))
        out: dict[str, Held] = {}
        for member in set(connectors) | set(tasks):
            out[member] = Held.of(connectors.get(member, ()), tasks.get(member, ()))
        return out


def _connectors(load: _Load) -> list[str]:
    return load.connectors


def _tasks(load: _Load) -> list[TaskId]:
    return load.tasks


def _duplicated(members: Mapping[str, Held]) -> Held:
    seen_c: set[str] = set()
    seen_t: set[TaskId] = set()
    dup_c: set[str] = set()
    dup_t: set[TaskId] = set()
    for held in members.values():
        dup_c |= seen_c & held.connectors
        dup_t |= seen_t & held.tasks
        seen_c |= held.connectors
        seen_t |= held.tasks
    return Held.of(dup_c, dup_t)


def _excess(held: Mapping[str, list[T]], total: int) -> dict[str, list[T]]:
    """Per member (in ``held``'s order), what to revoke so every member holds ``total // n``
    or one more of this kind of work."""
    n = len(held)
    floor, extra = divmod(total, n)
    sizes = [len(items) for items in held.values()]
    if sizes.count(floor + 1) == extra and sizes.count(floor) + sizes.count(floor + 1) == n:
        return {}
    out: dict[str, list[T]] = {}
    extras_given = 0
    for member, items in held.items():
        if len(items) <= floor:
            continue
        if extras_given < extra:
            extras_given += 1
            if len(items) == floor + 1:
                continue
            keep = floor + 1
        else:
            keep = floor
        out[member] = list(items[keep:])
    return out


def _spread(loads: list[_Load], items: Sequence[T], pick: Callable[[_Load], list[T]]) -> None:
    """Give ``items`` to the least loaded members, filling the lowest level first."""
    pending = list(items)
    while pending:
        loads.sort(key=lambda load: len(pick(load)))  # stable: equal loads keep member order
        lowest = len(pick(loads[0]))
        for load in [lo for lo in loads if len(pick(lo)) == lowest]:
            if not pending:
                break
            pick(load).append(pending.pop(0))


def _round_robin(loads: list[_Load], items: Sequence[T], pick: Callable[[_Load], list[T]]) -> None:
    for i, item in enumerate(items):
        pick(loads[i % len(loads)]).append(item)


def _describe(held: Held) -> str:
    tasks = ", ".join(f"{c}-{t}" for c, t in sorted(held.tasks))
    return f"connectors [{', '.join(sorted(held.connectors))}], tasks [{tasks}]"
