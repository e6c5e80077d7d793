"""The transport seam between the worker and plugin code: :class:`HostChannel`.

Only primitives cross it: an operation name and a tuple of arguments out, an answer (plain
tuples, lists, dicts, bytes, str, numbers) back, as httpx's transports take only primitives.
Two implementations: :class:`isolation.host.PluginHost` (a plugin host process over pipes,
the production path) and :class:`isolation.inprocess.InProcessHost` (the host's own dispatcher
on a thread of this process, for tests without subprocesses, and wherever the data path and the
plugin share a process). :class:`isolation.client.HostClient` gives the channel its types.

Every implementation honours the same contract: one request at a time; ``submit`` then
``result`` (or ``request`` for both); a request's answer arrives within its deadline or the
host is killed and the waiter gets :class:`~isolation.errors.PluginHostTimeout`; ``kill`` may
be called from any thread and the waiter then gets
:class:`~isolation.errors.PluginHostCrashed`; ``request_stop`` may be called from any thread
and ends a retry's backoff in the host at once; plugin exceptions arrive as
:class:`~isolation.errors.RemotePluginError`.
"""

from __future__ import annotations

from typing import Any, Protocol

from isolation._hostside.copycat_protocol import HostInfo

__all__ = ["Frame", "HostChannel"]

# A request serialized ahead of time by a channel's ``encode``: the operation and a body only
# that channel reads (a pickle across pipes, the arguments themselves on a direct channel).
Frame = tuple[bytes, Any]


class HostChannel(Protocol):
    name: str
    # Whether a submitted request runs while the caller goes on (a host process, a thread);
    # False for a channel that runs it on the caller's thread when its result is collected
    # (isolation.direct), where waiting for the request to finish would be waiting for nothing.
    overlaps: bool
    # Whether a put() may carry objects that cannot be pickled (the consumer's messages, as a
    # copycat_batch.MessageBatch): True only where the host runs in the caller's process and
    # thread (isolation.direct).
    passes_objects: bool

    @property
    def pid(self) -> int | None: ...

    @property
    def alive(self) -> bool: ...

    @property
    def pending(self) -> bool:
        """Whether a submitted request still awaits :meth:`result`."""
        ...

    def start(self, timeout_s: float = ...) -> HostInfo: ...

    def request(self, op: str, *args: Any, timeout_s: float | None = None) -> Any: ...

    def submit(self, op: str, *args: Any) -> None: ...

    def encode(self, op: str, *args: Any) -> Frame:
        """Serialize a request ahead of time for :meth:`submit_encoded`."""
        ...

    def submit_encoded(self, op: str, frame: Frame) -> None: ...

    def result(self, timeout_s: float | None = None) -> Any: ...

    def kill(self, reason: str | None = None) -> None: ...

    def request_stop(self) -> None:
        """Tell the host that its task is stopping (any thread, also while a request runs):
        a retry's backoff waiting in it ends at once."""
        ...

    def wake(self) -> None:
        """Wake the host's task loop from an idle wait (any thread, also while a request
        runs): a pause or resume is to be acted on now."""
        ...

    def close(self, timeout_s: float = ...) -> None: ...

    def stderr_tail(self) -> str: ...
