"""The group protocol says whether members sign internal requests (KIP-507)."""

from __future__ import annotations

import json

from core.distributed.assignor import Held
from core.distributed.protocol import Assignment, MemberMetadata


def test_sessioned_round_trips_and_an_older_member_without_it_is_not_sessioned() -> None:
    member = MemberMetadata("http://w1", 7, Held.of(["c"], [("c", 0)]), sessioned=True)
    assert MemberMetadata.decode(member.encode()) == member
    older = json.loads(member.encode())
    del older["sessioned"]
    assert MemberMetadata.decode(json.dumps(older).encode()).sessioned is False


def test_the_assignment_tells_members_whether_the_group_is_sessioned() -> None:
    assignment = Assignment(0, "leader", "http://w1", 7, Held(), Held(), 0, sessioned=True)
    assert Assignment.decode(assignment.encode()).sessioned is True
    older = json.loads(assignment.encode())
    del older["sessioned"]
    assert Assignment.decode(json.dumps(older).encode()).sessioned is False
