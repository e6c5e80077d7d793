"""Running the task loops in unit tests: every plugin in this process, a clock the test moves."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from core.runtime.loop import TaskLoop
from core.runtime.spec import PluginRef
from isolation import HostClient, InProcessHost


class InProcessHosts:
    """The HostLauncher of loop unit tests: every plugin in this process (importable here)."""

    def start(
        self,
        plugin: PluginRef,
        name: str,
        *,
        callbacks: Mapping[str, Callable[..., Any]],
        call_timeout_s: float,
        memory_limit_bytes: int,
        parent_first: tuple[str, ...] = (),  # everything is importable here already
    ) -> HostClient:
        host = InProcessHost(name=name, callbacks=callbacks, call_timeout_s=call_timeout_s)
        host.start()
        return HostClient(host)

    def import_path(self, plugin: PluginRef) -> str:
        raise AssertionError("everything is importable here; nothing to attach")


class Clock:
    """A monotonic clock that moves only when the test says (``clock.now += s``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run_until(loop: TaskLoop, done: Callable[[], bool], rounds: int = 200) -> None:
    """Drive ``loop`` until ``done()``; fail the test if ``rounds`` iterations are not enough."""
    for _ in range(rounds):
        if done():
            return
        loop.iteration()
    assert done(), "the loop did not get there"
