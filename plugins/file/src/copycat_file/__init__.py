"""FileStream connectors: a line-per-record file source and sink.

As Kafka Connect's ``connect-file``.

* :class:`FileStreamSourceConnector` (``org.apache.kafka.connect.file.FileStreamSourceConnector``)
  tails a file (or stdin) and emits one STRING record per line, resuming from
  the byte position stored as its source offset.
* :class:`FileStreamSinkConnector` (``org.apache.kafka.connect.file.FileStreamSinkConnector``)
  appends ``str(value)`` of every record as one line to a file (or stdout).

They are meant for demos and tests, not production pipelines.
"""

from __future__ import annotations

from copycat_file._version import __version__
from copycat_file.sink import FileStreamSinkConnector, FileStreamSinkTask
from copycat_file.source import FileStreamSourceConnector, FileStreamSourceTask

__all__ = [
    "FileStreamSinkConnector",
    "FileStreamSinkTask",
    "FileStreamSourceConnector",
    "FileStreamSourceTask",
    "__version__",
]
