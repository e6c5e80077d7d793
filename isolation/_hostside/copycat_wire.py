"""Framing of the worker <-> plugin host channel.

This module is imported both by the worker (as ``isolation._hostside.copycat_wire``) and by the
plugin host process (as the top-level ``copycat_wire``), so it depends on the standard library
only.

A frame is a 4-byte big-endian length followed by a pickle (protocol 5) of one message tuple.
Pickle is safe here because both ends are our own code in processes we started; what crosses is
tuples of bytes, ints and str, so a batch of 10,000 records pickles in a few milliseconds.

Messages (first element is the kind):

* worker -> host: ``("req", op, args)`` and ``("cbret", ok, value)`` (answer to a callback)
* host -> worker: ``("ok", value)``, ``("err", error_info)`` and ``("cb", name, args)``
  (a callback the host needs answered before it can finish the current request, e.g. reading
  source offsets).
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import Any

_HEADER = struct.Struct(">I")
# Frames above this are refused: a batch is bounded by MAX_RECORDS_PER_BATCH records, so a frame
# this large means a corrupted stream, and trusting its length would allocate without bound.
MAX_FRAME_BYTES = 1 << 30
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


def write_message(fd: int, message: tuple[Any, ...]) -> None:
    """Write one framed message to ``fd``, blocking until it is all written."""
    write_frame(fd, encode(message))


def write_frame(fd: int, frame: tuple[bytes, bytes]) -> None:
    """Write a frame made by :func:`encode`, blocking until it is all written."""
    header, payload = frame
    written = os.writev(fd, [header, payload])
    if written < len(header):
        _write_all(fd, memoryview(header)[written:])
        written = len(header)
    _write_all(fd, memoryview(payload)[written - len(header):])


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    filled = 0
    while filled < size:
        got = os.readv(fd, [view[filled:filled + _READ_CHUNK]])
        if not got:
            raise ChannelClosed("channel closed by peer")
        filled += got
    return buffer


def read_message(fd: int) -> tuple[Any, ...]:
    """Read one framed message from ``fd``, blocking until it is complete."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    if size > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {size} bytes exceeds the {MAX_FRAME_BYTES} byte limit")
    message = pickle.loads(_read_exact(fd, size))
    if not isinstance(message, tuple):
        raise ValueError(f"malformed message of type {type(message).__name__}")
    return message
