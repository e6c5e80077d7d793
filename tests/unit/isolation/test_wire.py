"""The host channel's framing: whole messages, large batches, and a closed peer."""

from __future__ import annotations

import os
import threading

import pytest

from isolation._hostside import copycat_wire as wire


def test_round_trip_of_a_large_batch_over_a_pipe() -> None:
    r, w = os.pipe()
    batch = [(i, b"k" * 10, b"v" * 100, None) for i in range(20_000)]
    writer = threading.Thread(target=wire.write_message, args=(w, ("ok", batch)))
    writer.start()  # the frame is larger than the pipe buffer: writing must not need a reader first
    assert wire.read_message(r) == ("ok", batch)
    writer.join()
    os.close(r)
    os.close(w)


def test_closed_peer_raises_channel_closed() -> None:
    r, w = os.pipe()
    os.write(w, b"".join(wire.encode(("ok", 1)))[:3])  # a torn frame, then the peer dies
    os.close(w)
    with pytest.raises(wire.ChannelClosed):
        wire.read_message(r)
    os.close(r)


def test_oversized_frame_is_refused() -> None:
    r, w = os.pipe()
    os.write(w, (wire.MAX_FRAME_BYTES + 1).to_bytes(4, "big"))
    with pytest.raises(ValueError, match="exceeds"):
        wire.read_message(r)
    os.close(r)
    os.close(w)
