"""FileStream connectors: a line-per-record file source and sink.

As Kafka Connect's ``connect-file``.

* :class:`FileStreamSourceConnector` (``org.apache.kafka.connect.file.FileStreamSourceConnector``)
  tails a file (or stdin) and emits one STRING record per line, resuming from
  the byte position stored as its source offset.
* :class:`FileStreamSinkConnector` (``org.apache.kafka.connect.file.FileStreamSinkConnector``)
  appends ``str(value)`` of every record as one line to a file (or stdout).

They are meant for demos and tests, not production pipelines. Copycat's own addition:

* :class:`ExactlyOnceFileSinkConnector` writes each partition to committed files named by
  their offset range (temporary file, fsync, atomic rename), recovers its position from those
  names, and so holds every record exactly once across crashes (:mod:`copycat_file.exactly_once`).

It lives in this distribution rather than a plugin of its own because it is the same kind of
component (local files, the same line format, no dependency beyond ``plugin_api``), and every
bundled distribution costs a worker an environment to build and a host interpreter to probe.
"""

from __future__ import annotations

from copycat_file._version import __version__
from copycat_file.exactly_once import ExactlyOnceFileSinkConnector, ExactlyOnceFileSinkTask
from copycat_file.sink import FileStreamSinkConnector, FileStreamSinkTask
from copycat_file.source import FileStreamSourceConnector, FileStreamSourceTask

__all__ = [
    "ExactlyOnceFileSinkConnector",
    "ExactlyOnceFileSinkTask",
    "FileStreamSinkConnector",
    "FileStreamSinkTask",
    "FileStreamSourceConnector",
    "FileStreamSourceTask",
    "__version__",
]
