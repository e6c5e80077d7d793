"""Framing of the worker <-> plugin host channel.

This module is imported both by the worker (as ``isolation._hostside.copycat_wire``) and by the
plugin host process (as the top-level ``copycat_wire``), so it depends on the standard library
only.

A frame is a 4-byte big-endian length followed by a pickle (protocol 5) of one message tuple.
Large pickles (put() and poll() batches) may instead go through a :class:`SharedRegion`, one per
direction: the writer copies the pickle into shared memory and the frame carries only its
length, with the top bit set. The channel is strictly request/answer (a side reads a message
whole before it sends anything back), so one region per direction is never written while its
reader still needs it.
Pickle is safe here because both ends are our own code in processes we started; what crosses is
tuples of bytes, ints and str, so a batch of 10,000 records pickles in a few milliseconds.

Messages (first element is the kind):

* worker -> host: ``("req", op, args)`` and ``("cbret", ok, value)`` (answer to a callback)
* host -> worker: ``("ok", value)``, ``("err", error_info)`` and ``("cb", name, args)``
  (a callback the host needs answered before it can finish the current request, e.g. reading
  source offsets).
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
from typing import Any

_HEADER = struct.Struct(">I")
# Frames above this are refused: a batch is bounded by MAX_RECORDS_PER_BATCH records, so a frame
# this large means a corrupted stream, and trusting its length would allocate without bound.
MAX_FRAME_BYTES = 1 << 30
# Set in a frame's length when its pickle is in the sender's shared region, not in the pipe.
_SHARED_FLAG = 1 << 31
# Pickles from this size on go through a shared region when the channel has one: below it,
# the pipe's two copies cost less than the extra system calls and page touches.
SHARED_MIN_BYTES = 64 << 10
_MIN_REGION_BYTES = 1 << 20
# os.read returns at most one pipe buffer at a time; asking for more costs nothing.
_READ_CHUNK = 1 << 20


class ChannelClosed(EOFError):
    """The peer closed its end of the channel (it exited or crashed)."""


# Linux lets a pipe buffer grow to /proc/sys/fs/pipe-max-size (1 MiB by default); a batch of
# 1 KiB records then crosses in a few system calls instead of one per 64 KiB.
_F_SETPIPE_SZ = 1031
PIPE_BUFFER_BYTES = 1 << 20


def enlarge_pipe(fd: int) -> None:
    """Grow a pipe's kernel buffer where the OS allows it; harmless where it does not."""
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BUFFER_BYTES)
    except (ImportError, OSError):
        pass


def encode(message: tuple[Any, ...]) -> tuple[bytes, bytes]:
    """A frame: the 4-byte length and the pickle, kept apart so the (possibly MBs) pickle is
    never copied just to prepend the length."""
    payload = pickle.dumps(message, protocol=5)
    return _HEADER.pack(len(payload)), payload


class SharedRegion:
    """Shared memory for one direction of a channel (Linux ``memfd``).

    A 2 MB batch through a pipe is copied into the kernel and out again, and the reader can
    unpickle only once the last byte arrived; through a region the writer makes one copy and
    the reader unpickles straight from the mapping. The writer grows the region when a pickle
    does not fit; the reader maps the new size when it sees a length beyond its mapping.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map: mmap.mmap | None = None

    @classmethod
    def create(cls, name: str) -> SharedRegion | None:
        """A new, empty region, or ``None`` where the OS has no anonymous shared files."""
        memfd_create = getattr(os, "memfd_create", None)
        if memfd_create is None:
            return None
        try:
            return cls(memfd_create(name))
        except OSError:
            return None

    @property
    def size(self) -> int:
        return len(self._map) if self._map is not None else 0

    def store(self, payload: bytes) -> None:
        """Copy ``payload`` to the start of the region, growing it first if needed."""
        size = len(payload)
        if size > self.size:
            os.ftruncate(self.fd, max(size, 2 * self.size, _MIN_REGION_BYTES))
            self._remap()
        assert self._map is not None
        self._map[:size] = payload

    def load(self, size: int) -> Any:
        """Unpickle the ``size``-byte pickle the writer stored."""
        if size > self.size:
            self._remap()
            if size > self.size:
                raise ValueError(
                    f"shared frame of {size} bytes exceeds its region of {self.size} bytes"
                )
        assert self._map is not None
        view = memoryview(self._map)[:size]
        try:
            return pickle.loads(view)
        finally:
            view.release()

    def _remap(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        length = os.fstat(self.fd).st_size
        if length:
            self._map = mmap.mmap(self.fd, length)

    def close(self) -> None:
        """Unmap and close; a mapping another thread is still reading from is left to the GC."""
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass
            self._map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def write_message(fd: int, message: tuple[Any, ...], region: SharedRegion | None = None) -> None:
    """Write one framed message to ``fd`` (its pickle to ``region`` if large), blocking until
    it is all written."""
    write_frame(fd, encode(message), region)


def write_frame(fd: int, frame: tuple[bytes, bytes], region: SharedRegion | None = None) -> None:
    """Write a frame made by :func:`encode`, blocking until it is all written."""
    header, payload = frame
    if region is not None and len(payload) >= SHARED_MIN_BYTES:
        region.store(payload)
        _write_all(fd, memoryview(_HEADER.pack(len(payload) | _SHARED_FLAG)))
        return
    written = os.writev(fd, [header, payload])
    if written < len(header):
        _write_all(fd, memoryview(header)[written:])
        written = len(header)
    _write_all(fd, memoryview(payload)[written - len(header) :])


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    filled = 0
    while filled < size:
        got = os.readv(fd, [view[filled : filled + _READ_CHUNK]])
        if not got:
            raise ChannelClosed("channel closed by peer")
        filled += got
    return buffer


def read_message(fd: int, region: SharedRegion | None = None) -> tuple[Any, ...]:
    """Read one framed message from ``fd`` (and ``region``), blocking until it is complete."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    shared = bool(size & _SHARED_FLAG)
    size &= ~_SHARED_FLAG
    if size > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {size} bytes exceeds the {MAX_FRAME_BYTES} byte limit")
    if shared:
        if region is None:
            raise ValueError("frame in shared memory on a channel without a shared region")
        message = region.load(size)
    else:
        message = pickle.loads(_read_exact(fd, size))
    if not isinstance(message, tuple):
        raise ValueError(f"malformed message of type {type(message).__name__}")
    return message
