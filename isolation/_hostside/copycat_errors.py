"""Per-record retries and tolerance inside the plugin host (stdlib + plugin_api only).

Kafka Connect's RetryWithToleranceOperator, for the stages that run in the host: the header,
key and value converters and the SMT chain (and, for sources, ``poll()``). A failing stage is
retried with exponential backoff and jitter while the error is retriable and
``errors.retry.timeout`` has not run out. The record that still fails is then reported to the
worker (which logs it and, for a sink, writes it to the dead letter queue) whatever the
tolerance, as Kafka's RetryWithToleranceOperator reports before it decides:
``errors.tolerance=all`` skips the record, while ``none`` stops the batch there, and the
worker fails the task with "Tolerance exceeded in error handler" once the record is reported.

The happy path costs nothing: stages run inside plain ``try`` blocks and this module is only
entered once something has failed.
"""

from __future__ import annotations

import math
import os
import select
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from plugin_api import (
    ConfigException,
    ConnectException,
    DataException,
    IllegalWorkerStateException,
    NotFoundException,
    RetriableException,
    SchemaBuilderException,
)

# Kafka's RetryWithToleranceOperator starts at 300 ms and doubles up to errors.retry.delay.max.ms.
INITIAL_RETRY_DELAY_MS = 300

# Kafka's ErrorHandlingMetrics / ProcessingContext stage names, used in DLQ headers and logs.
HEADER_CONVERTER = "HEADER_CONVERTER"
KEY_CONVERTER = "KEY_CONVERTER"
VALUE_CONVERTER = "VALUE_CONVERTER"
TRANSFORMATION = "TRANSFORMATION"
TASK_POLL = "TASK_POLL"
TASK_PUT = "TASK_PUT"


# Kafka's classes for the plugin_api exceptions that mirror them: the dead letter queue's
# __connect.errors.exception.class.name header and the first line of its stack trace carry
# these, as Kafka Connect's do, so DLQ tooling that filters on them works unchanged.
KAFKA_EXCEPTION_CLASSES: dict[type[BaseException], str] = {
    ConnectException: "org.apache.kafka.connect.errors.ConnectException",
    RetriableException: "org.apache.kafka.connect.errors.RetriableException",
    DataException: "org.apache.kafka.connect.errors.DataException",
    SchemaBuilderException: "org.apache.kafka.connect.errors.SchemaBuilderException",
    ConfigException: "org.apache.kafka.common.config.ConfigException",
    NotFoundException: "org.apache.kafka.connect.errors.NotFoundException",
    IllegalWorkerStateException: "org.apache.kafka.connect.errors.IllegalWorkerStateException",
}


def python_class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def kafka_class_name(cls: type) -> str:
    """The name Kafka Connect would write for ``cls`` in error context (DLQ headers, logs):
    Kafka's class for a plugin_api exception (:data:`KAFKA_EXCEPTION_CLASSES`), the first
    Kafka class a component is aliased to (``KAFKA_CLASS_ALIASES``, e.g.
    ``org.apache.kafka.connect.transforms.MaskField$Value``), else the Python class's
    ``module.qualname`` (pure-Python components and exceptions have no Kafka name)."""
    kafka = KAFKA_EXCEPTION_CLASSES.get(cls)
    if kafka is not None:
        return kafka
    aliases = cls.__dict__.get("KAFKA_CLASS_ALIASES")
    if aliases and isinstance(aliases[0], str):
        return str(aliases[0])
    return python_class_name(cls)


def retry_backoff_s(attempt: int, max_delay_ms: int) -> float:
    """Delay before retry ``attempt`` (1-based): Kafka's RetryWithToleranceOperator backoff,
    300 ms doubling up to ``max_delay_ms``, plus up to 10 % jitter. The one backoff of every
    retry loop, in the host (converters, SMTs, poll) and in the worker (a sink's put())."""
    import random  # when first retried: every host imports this module at start

    delay = max(0, min(INITIAL_RETRY_DELAY_MS << (attempt - 1), max_delay_ms))
    return float(delay + random.uniform(0, delay / 10)) / 1000


def describe(exc: BaseException) -> str:
    """``str(exc)``, or a stand-in when the plugin's exception cannot render itself.

    A plugin's ``__str__`` is plugin code: it may raise, and rendering the error must never turn
    one failed call into a crashed host (or a crashed worker, in the in-process twin).
    """
    try:
        return str(exc)
    except BaseException as failure:  # noqa: BLE001 - whatever __str__ raises
        try:
            why = f"{type(failure).__name__}: {failure}"
        except BaseException:  # noqa: BLE001 - its own __str__ may raise too
            why = type(failure).__name__
        return f"<{type(exc).__name__}: str() raised {why}>"


def raised_at(exc: BaseException) -> str | None:
    """Where in plugin code ``exc`` was raised, as ``file:line`` (the innermost frame outside
    the host's own modules; for a SyntaxError the line it points at), the file shown from its
    package on (``.../site-packages/`` cut off): what an author needs first when a plugin
    fails to load, as Kafka's plugin scan logs the stack trace. None when only the host's
    own code is on the stack (an entry point naming an attribute the module lacks)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        file, line = exc.filename, exc.lineno
    else:
        found = library = None
        tb = exc.__traceback__
        while tb is not None:
            where = tb.tb_frame.f_code.co_filename
            # Not the host's own code, nor importlib's frozen frames.
            if not where.startswith("<") and os.path.dirname(os.path.abspath(where)) != _HOST_DIR:
                if os.path.abspath(where).startswith(_stdlib_dir()):
                    library = (where, tb.tb_lineno)
                else:
                    found = (where, tb.tb_lineno)  # the plugin's (or its dependencies') code
            tb = tb.tb_next
        found = found or library
        if found is None:
            return None
        file, line = found
    _, cut, rest = file.rpartition("site-packages/")
    return f"{rest if cut else file}:{line}"


# The host's own modules (this directory): never "where" a plugin failed.
_HOST_DIR = os.path.dirname(os.path.abspath(__file__))
_STDLIB: str | None = None


def _stdlib_dir() -> str:
    """The standard library's directory: a plugin that called json.loads() wants its own
    line, not json's. Asked of ``sysconfig`` when first needed (a plugin failed), since
    importing it costs every host's start a few milliseconds (tests/unit/isolation/
    test_host_start_imports.py)."""
    global _STDLIB
    if _STDLIB is None:
        import sysconfig

        _STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
    return _STDLIB


def _exception_line(exc: BaseException) -> str:
    """The exception's first trace line, led by its Kafka name where it has one (so the
    trace starts with the DLQ's exception.class.name header, as in Kafka)."""
    cls = type(exc)
    try:
        line = "".join(traceback.format_exception_only(cls, exc))
    except BaseException:  # noqa: BLE001 - see describe()
        line = f"{python_class_name(cls)}: {describe(exc)}\n"
    kafka, python = kafka_class_name(cls), python_class_name(cls)
    if kafka != python and line.startswith(python):
        line = kafka + line[len(python) :]
    return line


def exception_trace(exc: BaseException) -> str:
    """A stack trace in Kafka's order (``ExceptionUtils.getStackTrace``), for status traces,
    the host's error answers and dead letter queue headers: the exception's type and message
    on the first line, which UIs and ``head -1`` show, then its frames, then each cause
    ("Caused by: ...") with its own frames, outermost first. Python's own format puts the
    innermost cause first and the error itself on the last line, under the worker's frames.
    An exception that cannot render itself still gets a trace (see :func:`describe`).
    """
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    label = ""
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(label + _exception_line(current))
        if current.__traceback__ is not None:
            parts.append("Traceback (most recent call last):\n")
            parts.extend(traceback.format_tb(current.__traceback__))
        if current.__cause__ is not None:
            current, label = current.__cause__, "Caused by: "
        elif current.__context__ is not None and not current.__suppress_context__:
            current, label = current.__context__, "Raised while handling: "
        else:
            current = None
    return "".join(parts)


class ContractViolation(ConnectException):
    """A plugin's call returned what the API forbids (e.g. ``pre_commit()`` a str): the
    worker tells it from an exception the plugin raised itself (error kind ``contract``)."""


class RetriablePut(RetriableException):
    """A put() that raised RetriableException, with the redelivery delay the task asked for
    (``context.timeout()`` before it raised; None if it did not), as data for the worker.
    Here, not in copycat_pipeline, so that a host that runs no task need not import that."""

    def __init__(self, cause: RetriableException, retry_after_ms: int | None) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.retry_after_ms = retry_after_ms


class FailedPut(Exception):
    """A put() that raised a non-retriable error, with the call's :class:`SinkActions` (a
    tuple): the records of its batch that had already failed and been tolerated, and those
    the task reported errant, still go to the dead letter queue, as Kafka reports each as it
    happens. Here for the same reason as :class:`RetriablePut`."""

    def __init__(self, cause: Exception, actions: tuple[Any, ...]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.actions = actions


class StageFailure(Exception):
    """One stage failed on one record; carries the stage and the component that failed."""

    def __init__(self, stage: str, component: object, error: BaseException) -> None:
        super().__init__(f"{stage} failed: {describe(error)}")
        self.stage = stage
        self.component = kafka_class_name(type(component))
        self.error = error

    def info(self) -> tuple[str, str, str, str, str]:
        """``(stage, class name, exception class, exception message, stack trace)``, the
        classes named as Kafka Connect names them where they have a Kafka name (see
        :func:`kafka_class_name`)."""
        error = self.error
        return (
            self.stage,
            self.component,
            kafka_class_name(type(error)),
            describe(error),
            exception_trace(error),
        )


# What the worker writes to a host's stop pipe: the task is stopping (sticky), or only wake
# its loop from an idle wait (a pause or resume to act on; core/runtime/in_host.py).
STOP_BYTE = b"s"
WAKE_BYTE = b"w"


class StopRequest:
    """The worker's request that the task of this host stop, which every retry backoff waits
    on (Kafka's RetryWithToleranceOperator waits on its ``stopRequestedLatch``): a retry then
    ends at once instead of holding the task's stop until the graceful timeout kills the host.
    Also the worker's wake-up of a task loop waiting in its host while idle (:meth:`wake`,
    :meth:`wait_woken`), so that a pause or resume acts at once.

    In a host process it is the read end of a pipe the worker writes to
    (:meth:`isolation.host.PluginHost.request_stop` writes :data:`STOP_BYTE`,
    :meth:`~isolation.host.PluginHost.wake` :data:`WAKE_BYTE`); what is read is kept here, and
    EOF (the worker is gone) counts as a stop. Anywhere else (a host on a thread of the worker)
    Events the worker sets. Only looked at while a retry waits or a hosted loop is idle: the
    per-record path never touches it.
    """

    def __init__(self, fd: int = -1) -> None:
        self._fd = fd
        self._event = threading.Event()
        self._woken = threading.Event()  # set by a stop too
        # poll(), not select(): the pipe keeps the worker's descriptor number, which may be
        # 1024 or more in a worker with many connectors.
        self._poll: select.poll | None = None
        if fd >= 0:
            os.set_blocking(fd, False)  # read only what is there
            self._poll = select.poll()
            self._poll.register(fd, select.POLLIN)

    def set(self) -> None:
        """Request the stop (a host in the worker's process; a host process's pipe is written
        by the worker)."""
        self._event.set()
        self._woken.set()

    def wake(self) -> None:
        """End a :meth:`wait_woken` (a host in the worker's process)."""
        self._woken.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def _take(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the pipe, and keep what was written to it."""
        assert self._poll is not None
        timeout_ms = min(max(0, math.ceil(timeout_s * 1000)), 2**31 - 1)
        if not self._poll.poll(timeout_ms):
            return
        try:
            data = os.read(self._fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data or STOP_BYTE in data:
            self._event.set()
        self._woken.set()

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s``; True, at once, if the stop is (or was) requested. A wake
        meanwhile does not end it (it is kept for :meth:`wait_woken`)."""
        if self._event.is_set():
            return True
        if self._poll is None:
            return self._event.wait(max(0.0, timeout_s))
        deadline = time.monotonic() + timeout_s
        while True:
            self._take(deadline - time.monotonic())
            if self._event.is_set() or time.monotonic() >= deadline:
                return self._event.is_set()

    def wait_woken(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for a wake or a stop; True, at once, if either came since
        the last call (the wake is taken, a stop stays)."""
        if not self._woken.is_set():
            if self._poll is None:
                self._woken.wait(max(0.0, timeout_s))
            else:
                self._take(timeout_s)
        woken = self._woken.is_set()
        if woken and not self._event.is_set():
            self._woken.clear()  # a wake after the test is merged with this one: both re-check
        return woken


class RetryStopped(Exception):
    """The task was asked to stop while a record's retriable failure was being retried: the
    record is not delivered (a source's is not sent, a sink's batch is not put), so its offset
    is not committed and it is processed again when the task runs next (at-least-once)."""

    def __init__(self, failure: StageFailure) -> None:
        super().__init__(f"stopped while retrying: {failure}")
        self.failure = failure


class ErrorPolicy:
    """``errors.retry.timeout``, ``errors.retry.delay.max.ms`` and ``errors.tolerance``;
    ``stop``: the host's :class:`StopRequest`, which ends a retry's backoff."""

    def __init__(
        self, configs: Mapping[str, Any] | None = None, stop: StopRequest | None = None
    ) -> None:
        configs = configs or {}
        self.retry_timeout_ms = int(configs.get("errors.retry.timeout", 0))
        self.retry_delay_max_ms = int(configs.get("errors.retry.delay.max.ms", 60_000))
        self.tolerate_all = str(configs.get("errors.tolerance", "none")).lower() == "all"
        # A dead letter queue takes the failed records: a sink's batch with failures waits
        # for it before it is put (copycat_pipeline.SinkRunner.put).
        self.dead_letters = bool(configs.get("errors.deadletterqueue.topic.name"))
        self.stop = stop if stop is not None else StopRequest()
        # Failed attempts and retries since :meth:`take_counts` (Kafka's ErrorHandlingMetrics
        # total-record-failures and total-retries), handed to the worker with an answer.
        self.failures = 0
        self.retries = 0

    def wait(self, delay_s: float) -> bool:
        """A retry's backoff: sleep ``delay_s``, or less if the task is asked to stop meanwhile
        (then True)."""
        return self.stop.wait(delay_s)

    def take_counts(self) -> tuple[int, int] | None:
        """``(failed attempts, retries)`` since the last call, None if there were none (a
        retry always follows a failure: ``failures`` alone says whether anything happened)."""
        if not self.failures:
            return None
        counts = (self.failures, self.retries)
        self.failures = self.retries = 0
        return counts

    def backoff_s(self, attempt: int) -> float:
        """Delay before retry ``attempt`` (1-based): doubling, capped, with jitter."""
        return retry_backoff_s(attempt, self.retry_delay_max_ms)

    def retries_left(self, started: float, attempt: int) -> float | None:
        """Seconds to sleep before the next attempt, or None when retrying is over: at once
        with errors.retry.timeout=0, or with errors.retry.delay.max.ms of 0 or less (Kafka's
        backoff cannot pick a delay under such a maximum and fails the record); never with a
        negative timeout."""
        if self.retry_timeout_ms == 0 or self.retry_delay_max_ms <= 0:
            return None
        delay = self.backoff_s(attempt)
        if self.retry_timeout_ms > 0:
            remaining = started + self.retry_timeout_ms / 1000 - time.monotonic()
            if remaining <= 0:
                return None
            delay = min(delay, remaining)
        return delay

    def recover(self, attempt_fn: Callable[[], Any], failure: StageFailure) -> Any:
        """Retry a failed record while allowed; return its result, or the final failure.

        Returns the StageFailure itself when retrying is over: the caller reports it, and
        skips the record (tolerance ``all``) or raises :class:`NotTolerated` (``none``).

        Raises:
            RetryStopped: the task was asked to stop before or during a backoff; the record
                is neither delivered nor reported as failed.
        """
        started = time.monotonic()
        attempt = 0
        # As Kafka's RetryWithToleranceOperator: each failed attempt is a failure, each
        # attempt after a backoff a retry.
        self.failures += 1
        while isinstance(failure.error, RetriableException):
            attempt += 1
            delay = self.retries_left(started, attempt)
            if delay is None:
                break
            if self.wait(delay):
                raise RetryStopped(failure)
            self.retries += 1
            try:
                return attempt_fn()
            except StageFailure as again:
                self.failures += 1
                failure = again
        return failure


class NotTolerated(Exception):
    """A record failed for good under ``errors.tolerance=none``: the batch stops at it. Its
    failure is reported with the batch's answer, and the worker fails the task then."""
