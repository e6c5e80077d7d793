"""A worker that is still starting answers status reads 409 "still starting up", as the
distributed worker's other reads: they answered 404 "No status found" for connectors that
exist (a distributed worker joining a cluster, ~0.5 s), and a script polling statuses through
a rolling restart took the connector for deleted. The status reads are the herders' shared
code (core/worker_herder.py); an unstarted standalone herder shows it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.herder import ConflictError
from core.standalone import StandaloneHerder

STARTING = "Cannot complete request because the worker is still starting up or shutting down"


@pytest.mark.parametrize(
    "read",
    [
        lambda h: h.connector_status("c1"),
        lambda h: h.task_status("c1", 0),
    ],
    ids=["connector_status", "task_status"],
)
def test_reads_of_a_worker_still_starting_answer_409(
    tmp_path: Path, read: Callable[[StandaloneHerder], Any]
) -> None:
    herder = StandaloneHerder(
        None,
        worker_props={
            "bootstrap.servers": "127.0.0.1:1",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "plugin.path": str(tmp_path),
            "offset.storage.file.filename": str(tmp_path / "offsets"),
        },
    )
    with pytest.raises(ConflictError) as info:
        read(herder)
    assert str(info.value) == STARTING
