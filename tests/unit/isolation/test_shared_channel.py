"""A real plugin host exchanging large batches through shared memory in both directions."""

from __future__ import annotations

import os
import sys

import pytest

from isolation.host import PluginHost

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="Linux memfd")


def test_large_requests_and_answers_cross_through_the_regions() -> None:
    host = PluginHost(sys.executable, name="shm-test", isolated_site=True)
    host.start()
    try:
        regions = (host._to_host_region, host._from_host_region)
        assert all(region is not None for region in regions)
        for count in (10, 3_000, 12_000, 50):  # small, ~3 MB, ~12 MB (both regions grow), small
            batch = [(i, b"%08d" % i * 128) for i in range(count)]
            assert host.request("eval", "builtins:list", (batch,)) == batch
        assert all(region.size >= 12_000 * 1024 for region in regions)  # type: ignore[union-attr]
        fds = os.listdir(f"/proc/{host.pid}/fd")
        assert len(fds) >= 5  # stdin/out/err, two pipe ends and the two region fds
    finally:
        host.close()
    assert host._to_host_region is None and host._from_host_region is None
