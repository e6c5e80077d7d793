"""The machinery that shares one Apache Kafka per test run: keeper, shared start, jar pinning."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.jvm import KEEPER, shared
from tests.support.kafka_jars import KAFKA_VERSION, POM

pytestmark = pytest.mark.integration


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0): it is gone once it is no longer running.
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state == "Z"


def _wait_gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


def _child_pid(keeper_pid: int) -> int:
    children = Path(f"/proc/{keeper_pid}/task/{keeper_pid}/children")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = children.read_text().split()
        if pids:
            return int(pids[0])
        time.sleep(0.02)
    raise AssertionError("keeper started no command")


def test_the_keeper_kills_its_command_when_the_watched_process_dies(tmp_path: Path) -> None:
    watched = subprocess.Popen(["sleep", "60"])
    keeper = subprocess.Popen(
        [sys.executable, str(KEEPER), str(watched.pid), str(tmp_path / "log"), "--", "sleep", "60"]
    )
    try:
        command = _child_pid(keeper.pid)
        time.sleep(0.3)
        assert not _gone(command)  # alive while the watched process lives
        watched.kill()
        watched.wait()
        assert keeper.wait(10) == 0
        assert _wait_gone(command)
    finally:
        watched.kill()
        keeper.kill()


def test_the_command_dies_with_a_killed_keeper(tmp_path: Path) -> None:
    keeper = subprocess.Popen(
        [sys.executable, str(KEEPER), str(os.getpid()), str(tmp_path / "log"), "--", "sleep", "60"]
    )
    try:
        command = _child_pid(keeper.pid)
        keeper.kill()  # SIGKILL: no cleanup runs in the keeper; PR_SET_PDEATHSIG must act
        keeper.wait()
        assert _wait_gone(command)
    finally:
        keeper.kill()


def test_shared_starts_once_and_again_when_the_described_process_is_gone(tmp_path: Path) -> None:
    started: list[int] = []

    def start(workdir: Path) -> dict[str, object]:
        proc = subprocess.Popen(["sleep", "60"])
        started.append(proc.pid)
        return {"pid": proc.pid, "address": f"svc-{len(started)}"}

    first = shared(tmp_path, "svc", start)
    again = shared(tmp_path, "svc", start)
    assert first == again and len(started) == 1
    os.kill(started[0], 9)
    os.waitpid(started[0], 0)
    third = shared(tmp_path, "svc", start)
    assert third["address"] == "svc-2"
    os.kill(started[1], 9)
    os.waitpid(started[1], 0)


def test_the_pom_and_the_code_pin_the_same_kafka_version() -> None:
    [pinned] = re.findall(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    assert pinned == KAFKA_VERSION
