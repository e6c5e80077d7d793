"""The host channel's framing: whole messages, large batches, and a closed peer."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

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


shared_memory = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="Linux memfd")


@pytest.fixture
def shared_pipe() -> Iterator[tuple[int, int, wire.SharedRegion, wire.SharedRegion]]:
    """A pipe with the writer and reader ends of one region, as the worker and host hold them."""
    r, w = os.pipe()
    writer = wire.SharedRegion.create("test")
    assert writer is not None
    reader = wire.SharedRegion(os.dup(writer.fd))
    yield r, w, writer, reader
    for end in (writer, reader):
        end.close()
    os.close(r)
    os.close(w)


@shared_memory
def test_large_frames_go_through_the_region_and_small_ones_through_the_pipe(shared_pipe) -> None:
    r, w, writer, reader = shared_pipe
    wire.write_message(w, ("ok", 1), writer)
    assert writer.size == 0  # nothing mapped for a small message
    assert wire.read_message(r, reader) == ("ok", 1)
    batch = [(i, b"%08d" % i * 125) for i in range(1000)]  # ~1 MB: through the region
    wire.write_message(w, ("ok", batch), writer)
    assert writer.size >= wire.SHARED_MIN_BYTES
    assert len(os.read(r, 1 << 16)) == 4  # only the length crossed the pipe


@shared_memory
def test_the_reader_follows_the_region_as_the_writer_grows_it(shared_pipe) -> None:
    r, w, writer, reader = shared_pipe
    for count in (100, 2_000, 9_000, 500):  # up to ~9 MB, then small again
        batch = [(i, b"%08d" % i * 128) for i in range(count)]
        wire.write_message(w, ("ok", batch), writer)
        assert wire.read_message(r, reader) == ("ok", batch)
    assert reader.size == writer.size >= 9_000 * 1024


def test_a_shared_frame_on_a_channel_without_a_region_is_refused() -> None:
    r, w = os.pipe()
    os.write(w, (1 << 31 | 100).to_bytes(4, "big"))
    with pytest.raises(ValueError, match="without a shared region"):
        wire.read_message(r)
    os.close(r)
    os.close(w)


@shared_memory
def test_a_shared_frame_longer_than_the_region_is_refused(shared_pipe) -> None:
    r, w, _writer, reader = shared_pipe
    os.write(w, (1 << 31 | 100).to_bytes(4, "big"))  # the writer never stored anything
    with pytest.raises(ValueError, match="exceeds its region"):
        wire.read_message(r, reader)
