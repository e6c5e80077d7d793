"""The operations of the worker <-> plugin host boundary and the shapes of their answers.

Imported by the plugin host (as the top-level ``copycat_protocol``) and by the worker (as
``isolation._hostside.copycat_protocol``, re-exported by :mod:`isolation`), so it depends on
the standard library only.

Answers cross the channel as plain tuples (a pickled NamedTuple names its class, and the two
sides import this module under different names); each side wraps them in the NamedTuples
below with ``Shape(*answer)``. Requests stay ``(op, args)`` tuples: the hot ones (poll, put)
are the frames the channel was measured with, and the typed client on the worker side
(:mod:`isolation.client`) is the only code that builds them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

# -- operation names (the host serves ``op_<name>``) -------------------------------------------
HELLO = "hello"
ATTACH = "attach"
NEW = "new"
CALL = "call"
EVAL = "eval"
DESCRIBE = "describe"
DROP = "drop"
SHUTDOWN = "shutdown"
TASK_CLASS = "task_class"
VALIDATE = "validate"
START_SOURCE_TASK = "start_source_task"
START_SINK_TASK = "start_sink_task"
POLL = "poll"
ACKED = "acked"
OFFSETS_BEFORE = "offsets_before"
PUT = "put"
# put() of the records a put held (its batch had failures for the dead letter queue), once the
# worker has their acknowledgement.
PUT_HELD = "put_held"
PRE_COMMIT = "pre_commit"
OPEN = "open"
CLOSE = "close"
STOP_TASK = "stop_task"
# The worker's log levels, as ``[(logger name or "root", level), ...]`` applied in order, each
# on the logger and its existing descendants (Kafka's ``Loggers.setLevel``). Sent by the
# worker before the first request and ahead of the next request after a change, never by
# plugin code (isolation/levels.py).
LEVELS = "levels"

# A line of the host's output that starts with this is a log record of plugin code:
# ``LOG_RECORD_MARK + json.dumps([level, logger name, text])``. The worker logs it under that
# logger at that level; any other line is plain output (prints, thread dumps).
LOG_RECORD_MARK = "\x1e"

# -- error kinds: how the worker's exception tree classifies a plugin's exception ----------
# CONTRACT: the plugin broke the API's contract (a call returned what it must not), as
# opposed to raising an exception of its own.
RETRIABLE, DATA, CONFIG, CONFLICT, CONTRACT, CONNECT, OTHER = (
    "retriable",
    "data",
    "config",
    "conflict",
    "contract",
    "connect",
    "other",
)

# -- connector events: what a connector asks of the runtime from any of its threads --------
REQUEST_TASK_RECONFIGURATION = "request_task_reconfiguration"
RAISE_ERROR = "raise_error"


# The attribute by which an exception raised inside a host carries a plugin's ErrorInfo from a
# host nested in it (a task's data path running in the plugin host calls the plugin through
# isolation.direct): the worker then sees the plugin's own error, not the data path's wrapper.
CARRIED_ERROR_INFO = "_copycat_error_info"

# The attribute set (True) on an exception raised while a task was set up (its class, its
# converters and transforms), before its start() was called: Kafka's Worker logs such a
# failure as "Failed to start task <name>", its WorkerTask one of start() itself otherwise.
# It crosses the channel as ErrorInfo.setup.
TASK_SETUP_FAILED = "_copycat_task_setup_failed"


class ErrorInfo(NamedTuple):
    """A plugin's exception, as data: the worker rebuilds its own exception from it."""

    type: str  # module.qualname of the plugin's exception class
    message: str
    kind: str  # one of the error kinds above
    traceback: str
    # For a retriable put(): the delay the task asked for with context.timeout() before it
    # raised (when the worker should redeliver the batch), else None.
    retry_after_ms: int | None = None
    # For a put() that raised anything else: the call's SinkActions (as a tuple), whose
    # ``failed`` and ``reported`` records (its batch's tolerated failures, the task's errant
    # records) the worker still sends to the dead letter queue before it fails the task.
    sink_actions: tuple[Any, ...] | None = None
    # Raised while a task was set up, before its start() (see TASK_SETUP_FAILED).
    setup: bool = False


class HostInfo(NamedTuple):
    pid: int
    executable: str
    prefix: str
    plugin_api: str


def describe_request(op: str, args: tuple[Any, ...]) -> str:
    """What a request does, for crash and deadline messages ("... during <this>"): a ``call``
    is named by the plugin method it calls (``start``, ``task_configs``, a hosted task's
    ``poll``), anything else by its operation."""
    if op == CALL and len(args) > 1 and isinstance(args[1], str):
        return args[1]
    return op


class SourceStarted(NamedTuple):
    version: str
    wants_acks: bool  # whether the task overrides commit_record() (acks must be sent back)


class PollResult(NamedTuple):
    """One poll() of a source task, converted and transformed.

    ``batch``: the records as ``copycat_batch.ProducedBatch.wire()`` (by column); topic None
    for a record the SMT chain dropped or whose tolerated failure is in ``failures``.
    ``failures``: ``(seq, description, stage, class, exception class, message, trace)``.
    ``offsets``: ``(source partition, source offset)`` of the last record per partition.
    """

    batch: tuple[Any, ...]
    failures: list[tuple[Any, ...]]
    offsets: list[tuple[Any, Any]]
    # Only for a task defining its own transactions (transaction.boundary=connector):
    # ``(row index, "commit" | "abort", offsets up to that row)`` in row order; row index -1
    # is after the whole batch (always last); empty for other tasks.
    boundaries: list[tuple[int, str, list[tuple[Any, Any]]]] = []
    # How long the task's poll() took (ms), None if it returned None (or raised a retriable
    # error): Kafka's poll-batch-time counts the polls that returned a list.
    poll_ms: float | None = None
    # ``(failed attempts, retries)`` of conversions and transforms under errors.retry.*
    # since the last answer that carried them (task-error-metrics); None for none.
    errors: tuple[int, int] | None = None


class SinkActions(NamedTuple):
    """What a sink task asked of its context during a call, plus that call's own outcome."""

    seeks: dict[tuple[str, int], int]
    pause: list[tuple[str, int]]
    resume: list[tuple[str, int]]
    request_commit: bool
    timeout_ms: int | None
    # Records the task reported as errant: (topic, partition, offset, stage, class,
    # exception class, message, trace).
    reported: list[tuple[Any, ...]]
    # put(): records whose conversion or transformation failed and was tolerated (same
    # shape as ``reported``); they were not put.
    failed: list[tuple[Any, ...]]
    # pre_commit(): the offsets the task says are safe to commit.
    commit: dict[tuple[str, int], int]
    # put(): ``(records handed to put(), its duration in ms)``, the sink's metrics
    # (sink-record-send, put-batch-time); None for any other call, and for a put() whose
    # batch is held for the dead letter queue (``failed`` not empty, see PUT_HELD).
    put: tuple[int, float] | None = None
    # put(): ``(failed attempts, retries)`` of conversions and transforms under
    # errors.retry.* since the last answer that carried them (task-error-metrics); None for
    # none.
    errors: tuple[int, int] | None = None


NO_SINK_ACTIONS = SinkActions({}, [], [], False, None, [], [], {})


class ConnectorEvent(NamedTuple):
    """Sent by the host on its events channel, outside any request."""

    handle: int
    kind: str  # REQUEST_TASK_RECONFIGURATION or RAISE_ERROR
    error: ErrorInfo | None
