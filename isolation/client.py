"""The typed client of a plugin host: what the worker may ask, and the shapes of the answers.

:class:`HostClient` wraps any :class:`~isolation.channel.HostChannel` (a host process, or the
in-process twin) and is the only code that knows the boundary's operation names and argument
orders (:mod:`isolation._hostside.copycat_protocol`). Answers come back as NamedTuples
(:class:`PollResult`, :class:`SinkActions`, ...). The hot operations keep the channel's
split between sending and collecting (``submit_poll``/``poll_result``,
``submit_put``/``put_result``) so the worker overlaps its own work with the host's, and a
``put`` can be serialized ahead of time (:meth:`HostClient.encode_put`): the frames are the
ones the channel was measured with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from isolation import stacks
from isolation._hostside import copycat_protocol as protocol
from isolation._hostside.copycat_protocol import (
    HostInfo,
    PollResult,
    SinkActions,
    SourceStarted,
)
from isolation.channel import Frame, HostChannel

__all__ = ["HostClient", "HostInfo", "PollResult", "SinkActions", "SourceStarted"]


class HostClient:
    """Typed operations on one plugin host. Not thread-safe beyond its channel's guarantees:
    one owner issues requests (any thread may :meth:`kill`)."""

    def __init__(self, channel: HostChannel) -> None:
        self.channel = channel
        self._next_handle = 0

    # -- the channel's life --------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.channel.name

    @property
    def pid(self) -> int | None:
        return self.channel.pid

    @property
    def alive(self) -> bool:
        return self.channel.alive

    @property
    def pending(self) -> bool:
        return self.channel.pending

    @property
    def overlaps(self) -> bool:
        """Whether a submitted request runs while the caller goes on (see HostChannel)."""
        return self.channel.overlaps

    @property
    def passes_objects(self) -> bool:
        """Whether a put() may carry unpicklable objects (see HostChannel)."""
        return self.channel.passes_objects

    def kill(self, reason: str | None = None) -> None:
        self.channel.kill(reason)

    def request_stop(self) -> None:
        """Tell the host that its task is stopping; any thread, also while a request runs: a
        retry of a record's retriable failure waiting there ends at once (the record is not
        delivered), as Kafka's RetryWithToleranceOperator.triggerStop() ends its backoff."""
        self.channel.request_stop()

    def wake(self) -> None:
        """Wake the host's task loop from an idle wait (any thread, also while a request
        runs), so that its request answers now: a pause or resume is to be acted on."""
        self.channel.wake()

    def close(self, timeout_s: float | None = None) -> None:
        if timeout_s is None:
            self.channel.close()
        else:
            self.channel.close(timeout_s)

    def stderr_tail(self) -> str:
        return self.channel.stderr_tail()

    def request_stacks(self) -> bool:
        """Ask the host process to write its threads' stacks to its output, which reaches the
        worker's log (:mod:`isolation.stacks`); False for a host running in this process or
        one that cannot answer. Any thread may call it."""
        pid = self.pid
        return pid is not None and pid != os.getpid() and stacks.request(pid)

    # -- plugin objects ---------------------------------------------------------------------

    def next_handle(self) -> int:
        """A handle for an object the host will create in a later request."""
        self._next_handle += 1
        return self._next_handle

    def new(self, target: str, configs: Mapping[str, Any] | None = None) -> int:
        """Instantiate ``target`` (``module:Class``) in the host; return its handle."""
        handle = self.next_handle()
        self.channel.request(protocol.NEW, handle, target, configs)
        return handle

    def call(self, handle: int, method: str, *args: Any, timeout_s: float | None = None) -> Any:
        """Call ``method(*args)`` on a plugin object (connector lifecycle, version, ...)."""
        return self.channel.request(protocol.CALL, handle, method, args, None, timeout_s=timeout_s)

    def drop(self, handle: int) -> None:
        self.channel.request(protocol.DROP, handle)

    def attach(self, location: str) -> list[str]:
        """Make another plugin location importable child-first in the host (its modules)."""
        modules: list[str] = self.channel.request(protocol.ATTACH, location)
        return modules

    def describe(self, targets: Sequence[str]) -> list[dict[str, Any]]:
        """Kind, class name, version (or an error) of each entry point value."""
        described: list[dict[str, Any]] = self.channel.request(protocol.DESCRIBE, list(targets))
        return described

    def eval(self, target: str, *args: Any) -> Any:
        """Call a module-level function in the host (tests, probes)."""
        return self.channel.request(protocol.EVAL, target, args)

    # -- connectors -------------------------------------------------------------------------

    def validate(self, handle: int, props: Mapping[str, str]) -> dict[str, Any]:
        """The REST ``config/validate`` body for the plugin's own keys."""
        infos: dict[str, Any] = self.channel.request(protocol.VALIDATE, handle, dict(props))
        return infos

    def task_class(self, handle: int) -> str:
        """The connector's task class, as ``module:Class``."""
        return str(self.channel.request(protocol.TASK_CLASS, handle))

    # -- tasks ------------------------------------------------------------------------------

    def start_source_task(
        self,
        handle: int,
        target: str,
        props: Mapping[str, str],
        pipeline: Mapping[str, Any],
        connector_boundaries: bool = False,
    ) -> SourceStarted:
        """Start the task; ``connector_boundaries``: it gets a transaction context, and its
        polls answer the boundaries it asks for (:attr:`PollResult.boundaries`)."""
        args: tuple[Any, ...] = (handle, target, dict(props), dict(pipeline))
        if connector_boundaries:
            args += (True,)
        answer = self.channel.request(protocol.START_SOURCE_TASK, *args)
        return SourceStarted(*answer)

    def start_sink_task(
        self,
        handle: int,
        target: str,
        props: Mapping[str, str],
        pipeline: Mapping[str, Any],
        errant_reporting: bool,
    ) -> str:
        """Start the task; returns its version."""
        version = self.channel.request(
            protocol.START_SINK_TASK, handle, target, dict(props), dict(pipeline), errant_reporting
        )
        return str(version)

    def submit_poll(
        self, handle: int, acks: Sequence[tuple[Any, ...]], *, commit: bool = False
    ) -> None:
        """Send acks of earlier records (commit_record) and the next poll, without waiting;
        ``commit``: call the task's ``commit()`` first (offsets were committed since)."""
        if commit:
            self.channel.submit(protocol.POLL, handle, acks, True)
        else:
            self.channel.submit(protocol.POLL, handle, acks)

    def poll_result(self, timeout_s: float | None = None) -> PollResult:
        return PollResult(*self.channel.result(timeout_s))

    def poll(
        self, handle: int, acks: Sequence[tuple[Any, ...]] = (), timeout_s: float | None = None
    ) -> PollResult:
        """:meth:`submit_poll` and :meth:`poll_result` in one (tests, tools)."""
        self.submit_poll(handle, acks)
        return self.poll_result(timeout_s)

    def put(self, handle: int, batch_wire: tuple[Any, ...]) -> SinkActions:
        """:meth:`submit_put` and :meth:`put_result` in one (tests, tools)."""
        self.submit_put(handle, batch_wire)
        return self.put_result()

    def acked(self, handle: int, acks: Sequence[tuple[Any, ...]]) -> None:
        self.channel.request(protocol.ACKED, handle, acks)

    def offsets_before(self, handle: int, seq: int) -> list[tuple[Any, Any]] | None:
        """The source offsets of the records polled with record ``seq`` before it (the last
        per source partition); None when the host no longer keeps that poll."""
        answer: list[tuple[Any, Any]] | None = self.channel.request(
            protocol.OFFSETS_BEFORE, handle, seq
        )
        return answer

    def encode_put(self, handle: int, batch_wire: tuple[Any, ...]) -> Frame:
        """Serialize a put() ahead of time, while the host is busy with the previous one."""
        return self.channel.encode(protocol.PUT, handle, batch_wire)

    def submit_put(
        self, handle: int, batch_wire: tuple[Any, ...], frame: Frame | None = None
    ) -> None:
        if frame is None:
            self.channel.submit(protocol.PUT, handle, batch_wire)
        else:
            self.channel.submit_encoded(protocol.PUT, frame)

    def submit_put_held(self, handle: int) -> None:
        """put() the records the last put held for the dead letter queue (its answer had
        ``failed`` records and ``put`` None); the answer comes from :meth:`put_result`."""
        self.channel.submit(protocol.PUT_HELD, handle)

    def put_result(self, timeout_s: float | None = None) -> SinkActions:
        return SinkActions(*self.channel.result(timeout_s))

    def pre_commit(self, handle: int, offsets: Mapping[tuple[str, int], int]) -> SinkActions:
        return SinkActions(*self.channel.request(protocol.PRE_COMMIT, handle, dict(offsets)))

    def open(self, handle: int, partitions: Sequence[tuple[str, int]]) -> SinkActions:
        return SinkActions(*self.channel.request(protocol.OPEN, handle, list(partitions)))

    def close_partitions(self, handle: int, partitions: Sequence[tuple[str, int]]) -> SinkActions:
        return SinkActions(*self.channel.request(protocol.CLOSE, handle, list(partitions)))

    def stop_task(self, handle: int, timeout_s: float | None = None) -> None:
        self.channel.request(protocol.STOP_TASK, handle, timeout_s=timeout_s)

    def result(self, timeout_s: float | None = None) -> Any:
        """Collect whatever request is pending, discarding its answer (a stop mid-poll)."""
        return self.channel.result(timeout_s)
