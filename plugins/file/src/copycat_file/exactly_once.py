"""ExactlyOnceFileSinkConnector: each record exactly once in committed files, across crashes.

The write-once / read-many strategy of storage sinks (HDFS, S3), on a local directory:

* Records of each partition are appended to a temporary file. A file is committed when it
  holds ``flush.size`` records and at every offset commit of the worker
  (``offset.flush.interval.ms``, and when the partition is revoked or the task stops): its
  data is fsynced, it is renamed to ``<topic>-<partition>-<first offset>-<last offset>.txt``
  in ``directory`` and the directory is fsynced (:mod:`copycat_file._committed_files`).
* The committed files are the only record of progress. When a partition is opened (task
  start, rebalance, restart after a crash) the task reads the highest committed offset from
  the file names, deletes leftover temporary files, and asks the runtime to consume from the
  next offset (``context.offset()``). Kafka's consumer group offsets are committed too, but
  only up to what the files hold (``pre_commit()``), for lag monitoring; they are never read
  back for a partition that has committed files.

Guarantees:

* **Exactly once**: every record of a partition, from where the partition started, is in
  exactly one committed file, whatever crashes (``kill -9`` of the worker or the plugin host,
  power loss on a file system honouring fsync) happen in between. A crash loses only
  temporary files, whose records are consumed again.
* **Atomic visibility**: a committed file appears whole, never partially written; files of one
  partition cover disjoint, increasing offset ranges (gaps are offsets with no record:
  transaction markers, compacted or aborted records).
* **Fenced writers**: a task that lost its partition while it was stalled (its group session
  expired, the partition went to another task) cannot commit it any more: commits compare the
  partition's committed end under an exclusive lock and the new owner deletes the old owner's
  temporary file, so the stale writer's records are dropped and it rewinds.

Limits: one line per record (the value as Kafka's FileStreamSink prints it), so a value with
a newline spans two lines; the directory must be on a local file system (POSIX ``rename()``
and ``flock()``); a partition without committed files starts where the consumer group says
(its committed offset, else ``auto.offset.reset``, ``earliest`` by default): with ``latest``,
records consumed before the first commit of a new partition are skipped after a crash, as
with any sink. Records of topics read with ``isolation.level=read_uncommitted`` (not the
default) may include aborted transactions; exactly once then means exactly what was read.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from copycat_file._committed_files import Fenced, PartitionFiles
from copycat_file._connector import ConfiguredConnector
from copycat_file._version import __version__
from copycat_file.sink import lines_bytes
from plugin_api import (
    ConfigDef,
    ConfigType,
    ConnectException,
    Importance,
    NonEmptyString,
    Range,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)

__all__ = ["ExactlyOnceFileSinkConnector", "ExactlyOnceFileSinkTask"]

log = logging.getLogger(__name__)

DIRECTORY_CONFIG = "directory"
FLUSH_SIZE_CONFIG = "flush.size"
# Records per committed file unless an offset commit comes first. Each commit costs two
# fsyncs and a rename (milliseconds on a disk); at 100k records/s, 10,000 records a file make
# that ten commits a second per partition, and files of a few MB for 1 KiB records.
DEFAULT_FLUSH_SIZE = 10_000

CONFIG_DEF = (
    ConfigDef()
    .define(
        DIRECTORY_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="Directory of the committed files (created if missing); temporary "
        "files go to its .copycat-tmp subdirectory. Must be on a local file system.",
    )
    .define(
        FLUSH_SIZE_CONFIG,
        ConfigType.INT,
        DEFAULT_FLUSH_SIZE,
        Range.at_least(1),
        Importance.MEDIUM,
        "Records per committed file: a file is committed as soon as it holds this many, and "
        "at every offset commit whatever it holds.",
    )
    .define(
        SinkConnector.TOPICS_CONFIG,
        ConfigType.LIST,
        "",
        None,
        Importance.HIGH,
        "List of topics to consume, separated by commas",
    )
    .define(
        SinkConnector.TOPICS_REGEX_CONFIG,
        ConfigType.STRING,
        "",
        None,
        Importance.HIGH,
        "Regular expression giving topics to consume",
    )
)


class ExactlyOnceFileSinkConnector(ConfiguredConnector, SinkConnector):
    """Writes each partition of its topics to committed files, each record exactly once.

    Runs in the connector's plugin host; every method is called on the connector's
    operation thread. Tasks share one directory: each partition is written by one task at a
    time, and its files carry its topic and partition in their names. Its config:
    ``directory``, ``flush.size`` and the runtime's ``topics`` / ``topics.regex``.
    """

    config_def = CONFIG_DEF

    def task_class(self) -> type[Task]:
        """Return :class:`ExactlyOnceFileSinkTask`."""
        return ExactlyOnceFileSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Return ``max_tasks`` identical configs: the consumer group spreads the partitions."""
        return [dict(self._props) for _ in range(max_tasks)]


class ExactlyOnceFileSinkTask(SinkTask):
    """Writes records to per-partition temporary files and commits them by atomic rename.

    Every method runs on the task's thread in its plugin host. ``open()`` recovers a
    partition from its committed files and rewinds the consumer there; ``put()`` appends and
    commits full files; ``pre_commit()`` commits what is left and returns what the files hold;
    ``close()`` and ``stop()`` drop uncommitted temporary files (their records are consumed
    again by whoever owns the partition next). After a crash nothing of this task runs:
    the next ``open()`` of each partition deletes what it left.
    """

    def __init__(self) -> None:
        """Create an unstarted task."""
        self._directory = Path()
        self._flush_size = DEFAULT_FLUSH_SIZE
        self._files: dict[TopicPartition, PartitionFiles] = {}
        self._next: dict[TopicPartition, int] = {}  # next offset expected, per open partition

    def version(self) -> str:
        """Return the copycat-file version."""
        return __version__

    def start(self, props: Mapping[str, str]) -> None:
        """Parse the config and create the directory.

        Raises:
            ConnectException: naming the directory if it cannot be created.
        """
        config = CONFIG_DEF.parse(props)
        self._directory = Path(config[DIRECTORY_CONFIG])
        self._flush_size = config[FLUSH_SIZE_CONFIG]
        try:
            self._directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConnectException(
                f"ExactlyOnceFileSinkTask cannot create directory '{self._directory}': "
                f"{exc.strerror or exc}"
            ) from exc

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Recover each partition from its committed files and rewind the consumer to the
        offset after the last one (a partition without files starts where the group says)."""
        rewind = {}
        for tp in partitions:
            files = PartitionFiles(self._directory, tp.topic, tp.partition)
            try:
                end = files.recover()
            except OSError as exc:
                raise ConnectException(
                    f"ExactlyOnceFileSinkTask cannot recover {tp.topic}-{tp.partition} from "
                    f"'{self._directory}': {exc}"
                ) from exc
            self._files[tp] = files
            self._next[tp] = end if end is not None else 0
            if end is not None:
                rewind[tp] = end
        if rewind:
            log.info("ExactlyOnceFileSinkTask resumes from the committed files at %s", rewind)
            self.context.offset(rewind)

    def put(self, records: Sequence[SinkRecord]) -> None:
        """Append each record to its partition's temporary file, committing every file that
        reaches ``flush.size`` records. Records at offsets already written are skipped.

        Raises:
            ConnectException: a record of a partition that is not open, or a write failed.
        """
        if not records:
            return
        # Each partition's records in one go: after a fenced commit, none of the partition's
        # later records in this batch may be written (they are consumed again after the rewind).
        by_partition: dict[TopicPartition, list[SinkRecord]] = {}
        for tp, run in itertools.groupby(
            records, key=lambda r: TopicPartition(r.topic, r.kafka_partition or 0)
        ):
            by_partition.setdefault(tp, []).extend(run)
        skipped = 0
        for tp, group in by_partition.items():
            skipped += self._append(tp, group)
        if skipped:
            log.warning(
                "ExactlyOnceFileSinkTask skipped %d records at offsets already written", skipped
            )

    def _append(self, tp: TopicPartition, records: list[SinkRecord]) -> int:
        files = self._files.get(tp)
        if files is None:
            raise ConnectException(
                f"ExactlyOnceFileSinkTask got records of {tp.topic}-{tp.partition}, which is "
                f"not open (open: {sorted(self._files)})"
            )
        expected = self._next[tp]
        fresh = [r for r in records if r.kafka_offset >= expected]
        start = 0
        while start < len(fresh):
            held = files.temp.records if files.temp is not None else 0
            chunk = fresh[start : start + self._flush_size - held]
            start += len(chunk)
            data = lines_bytes(chunk)
            try:
                files.write(chunk[0].kafka_offset, chunk[-1].kafka_offset, data, len(chunk))
            except OSError as exc:
                raise ConnectException(
                    f"ExactlyOnceFileSinkTask cannot write {tp.topic}-{tp.partition} to "
                    f"'{self._directory}': {exc}"
                ) from exc
            self._next[tp] = chunk[-1].kafka_offset + 1
            if held + len(chunk) >= self._flush_size and not self._commit(tp, files):
                break  # fenced: rewound to where the partition stands, the rest comes again
        return len(records) - len(fresh)

    def _commit(self, tp: TopicPartition, files: PartitionFiles) -> bool:
        """Commit the partition's temporary file; False if this task was fenced (and has
        rewound the partition to its committed end).

        Raises:
            ConnectException: the file could not be synced or renamed.
        """
        try:
            files.commit()
            return True
        except Fenced as fenced:
            log.warning(
                "ExactlyOnceFileSinkTask: %s; rewinding to offset %d", fenced, fenced.committed_end
            )
            files.committed_end = fenced.committed_end
            self._next[tp] = fenced.committed_end
            self.context.offset(tp, fenced.committed_end)
            return False
        except OSError as exc:
            raise ConnectException(
                f"ExactlyOnceFileSinkTask cannot commit {tp.topic}-{tp.partition} in "
                f"'{self._directory}': {exc}"
            ) from exc

    def pre_commit(
        self, current_offsets: Mapping[TopicPartition, int]
    ) -> Mapping[TopicPartition, int]:
        """Commit the temporary files of the partitions asked about; return, for each, the
        offset after its last committed file (what the group may commit: never more than the
        files hold)."""
        committable = {}
        for tp in current_offsets:
            files = self._files.get(tp)
            if files is None:
                continue
            self._commit(tp, files)
            if files.committed_end is not None:
                committable[tp] = files.committed_end
        return committable

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Drop the partitions' uncommitted temporary files (the runtime committed before a
        revocation; what is left here was never committed and is consumed again)."""
        for tp in partitions:
            files = self._files.pop(tp, None)
            self._next.pop(tp, None)
            if files is not None:
                files.discard()

    def stop(self) -> None:
        """Drop every uncommitted temporary file."""
        self.close(list(self._files))
