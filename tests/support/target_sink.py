"""A sink that keeps its offsets in its target, atomically with the data (the deep-dive seed's
Strategy B): the shape of every exactly-once sink, small enough to check the loop against.

The "target" is an in-memory :class:`Target` shared by name (``target`` in the task config)
within this process, so it outlives task instances: a test builds a second loop after
abandoning the first (a crash) and sees what the first wrote. Only for the in-process host.

The task:

* writes every record together with its partition's next offset (``put()``), refusing a
  record that does not follow the last one of its partition (a duplicate, or a gap that no
  rewind explains);
* returns nothing from ``pre_commit()``: Kafka's group offsets are never the truth;
* rewinds every partition it opens to the target's next offset, 0 for one it has never
  written (``rewind.in=open``, the default), or those it knows of from ``start()``
  (``rewind.in=start``);
* optionally loses the target's tail once (``lose.after=N``: after N records of a partition,
  the target rolls back to N/2 records on the next ``put()`` and the task rewinds there).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from plugin_api import ConfigDef, SinkConnector, SinkRecord, SinkTask, Task, TopicPartition


@dataclass
class Target:
    """Rows ``(topic, partition, offset, value)`` and each partition's next offset."""

    rows: list[tuple[str, int, int, object]] = field(default_factory=list)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    pre_commits: int = 0
    opened: list[tuple[str, int]] = field(default_factory=list)

    def offsets_of(self, topic: str, partition: int) -> list[int]:
        return [r[2] for r in self.rows if (r[0], r[1]) == (topic, partition)]


TARGETS: dict[str, Target] = {}


class TargetSinkTask(SinkTask):
    def version(self) -> str:
        return "1.0"

    def start(self, props: Mapping[str, str]) -> None:
        self.target = TARGETS.setdefault(props["target"], Target())
        self.rewind_in = props.get("rewind.in", "open")
        self.lose_after = int(props.get("lose.after", "0"))
        if self.rewind_in == "start":
            self.context.offset({TopicPartition(*tp): o for tp, o in self.target.offsets.items()})

    def open(self, partitions: Collection[TopicPartition]) -> None:
        self.target.opened.extend((tp.topic, tp.partition) for tp in partitions)
        if self.rewind_in != "open":
            return
        offsets = self.target.offsets
        # A partition the target has never seen starts at 0 (that is: the log's start, via
        # auto.offset.reset), whatever the group may have committed.
        self.context.offset({tp: offsets.get((tp.topic, tp.partition), 0) for tp in partitions})

    def put(self, records: Sequence[SinkRecord]) -> None:
        target = self.target
        for record in records:
            tp = (record.topic, record.kafka_partition or 0)
            offset = record.kafka_offset
            expected = target.offsets.get(tp)
            if expected is not None and offset != expected:
                raise AssertionError(f"{tp}: got offset {offset}, the target is at {expected}")
            target.rows.append((*tp, offset, record.value))
            target.offsets[tp] = offset + 1
            if self.lose_after and offset + 1 == self.lose_after:
                self.lose_after = 0
                self._roll_back(tp, offset + 1)
                return  # the rest of this batch is read again from the rewound offset

    def _roll_back(self, tp: tuple[str, int], written: int) -> None:
        keep = written // 2
        target = self.target
        target.rows = [r for r in target.rows if (r[0], r[1]) != tp or r[2] < keep]
        target.offsets[tp] = keep
        self.context.offset(TopicPartition(*tp), keep)

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        self.target.pre_commits += 1
        return {}

    def stop(self) -> None:
        pass


class TargetSinkConnector(SinkConnector):
    def version(self) -> str:
        return "1.0"

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[Task]:
        return TargetSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()
