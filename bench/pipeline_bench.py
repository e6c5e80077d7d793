"""Source and sink path throughput: Copycat's file connectors next to bare confluent-kafka loops.

Run from the repository root:

    uv run python bench/pipeline_bench.py [--quick] [--broker dev|kafka|both]
                                          [--data-path both|host|worker|auto] [--repeats N]

For each broker (the Tansu dev broker, then Apache Kafka from tests/kafka/pom.xml), in one run,
with Copycat's tasks in each data path (``task.data.path``: ``host``, the loop and its Kafka
client in the plugin host; ``worker``, the loop in the worker and bytes crossing to the host;
both by default, each against the same bare loops of the same run, in turns):

* source: FileStreamSource -> StringConverter -> Kafka, vs a bare loop that reads the same file
  and produces each line with Copycat's producer settings (Kafka Connect's: acks=all, one
  request in flight, not idempotent; linger 5 ms, murmur2), in its cheapest correct form: no
  callable and no poll() per record; librdkafka reports failed deliveries only, and flush()
  must leave none and nothing unsent;
* sink: Kafka -> StringConverter -> FileStreamSink, vs a bare consumer loop with the sink
  consumer's settings writing each batch of values, newline-terminated, in one call (both
  read SINK_COPIES copies of the input); then
  the sink with 1 and 2 tasks on a 2-partition topic, plain and with a 3-SMT chain (one
  plain 100 B task already keeps both of a 2-core machine's cores busy with its worker,
  plugin host and the broker; the chain makes each task's host CPU-bound).

How each run is timed, the same way for both sides: from each loop's own progress points,
``(records moved so far, time.monotonic())`` after every batch it hands to the producer (a
source) or writes/puts (a sink); the rate is the records after the first point over the time
from the first point to the last. Copycat's loops publish theirs (``TaskLoop.progress``),
wherever the data path runs (in the worker, or in the plugin host: the host's clock is the
same CLOCK_MONOTONIC), so nothing here depends on how often the worker hears from a host.
A source is timed to the delivery of its last record, not its hand-off (either producer may
run ahead of the broker by its whole queue). On Apache Kafka both sides' topics use
``message.timestamp.type=LogAppendTime`` and the timer is the span of the broker's own append
stamps, read back after the run (records after the first append over the time to the last).
The dev broker ignores that setting (and its high watermark counts batches, not records), so
there both sides' timers end when the topic's last record can be read: a consumer in a process
of its own, the same for both sides, waits at the last offset with a 5 ms fetch wait and
stamps the record's arrival (on this machine 1-2 ms after a bare producer's final flush
returns). CPU per record is counted over the same spans, to the bare flush's return and to
that stamp for Copycat, on both brokers (on Apache Kafka the watcher ends only the CPU span;
ending it at Copycat's last hand-off left out the up to 100,000 records librdkafka still
held: the 1 KiB source's CPU shares of 1.2-1.6 in earlier rounds were partly that).
Copycat's committed end offset is still checked, untimed: it comes after the last
ack plus up to FileStreamSource's 0.1 s idle poll and the commit interval, a cadence, not
throughput (timing to it cost 0.1-0.2 s on 0.5-0.8 s runs before). Both sources read the same
input file, written (and fsynced) before any run: Copycat's source task starts on a file that
does not exist yet, which becomes a hard link to the input once its producer is connected
(PRODUCER_READY_WAIT_S; the bare loop sends one untimed record first for the same reason),
so neither side's queue fills before the clock starts. Both sinks read a topic Copycat's
source wrote, after one untimed read (the dev broker serves a topic's first read several
times slower). Before its first timed run, Apache Kafka's JVM is warmed up: the bare loops
produce and read back each input a few times, untimed (JVM_WARM_UP_ROUNDS), so that no run
pays for its JIT compiling. Sinks keep Kafka's default 60 s commit interval, so their
timings hold no fsync (the bare loops never fsync).

Before each timed run the file systems are synced and the broker must be idle
(:class:`Settle`: its processes under 0.05 of a core over 0.2 s), and each side settles after
its own setup, right before its first record moves (``on_start``): Copycat's connector and task
start, and its producer connects, before the wait, and its sink tasks start paused and are
resumed after it, as the bare loops' clients are made before it. On this machine the same
bare 1 KiB sink loop ran at a median 1,026k records/s when it started right after the wait,
829k after a further 1.5 s idle and 780k after 5 s (twelve of each, alternating; nothing else
differed), and Copycat's setup used to fall in that gap (docs/benchmarks.md, seventeenth
round). What an earlier run left the kernel or the broker to do (dirty pages to write back,
the dev broker freeing deleted topics, Apache Kafka deleting their files, which the bench
broker does at once rather than 60 s later, its garbage collector and JIT) used to land in
whichever run came next. A run during
which Apache Kafka's JIT compilers used more than JIT_QUIET_CPU_S is run again, for either
side (:class:`Compiler`), and each cell prints how many were. Each cell
also prints its runs' CPU per record split by whether the run came first in its repeat, and
the range of a pure-Python calibration loop timed before each run (:func:`calibrate`): the
machine has slow phases in which both sides spend ~2x the CPU per record.

Each result is checked (record count; output == input byte for byte where order is defined;
committed source offsets) before its number is printed. The ratio is Copycat / bare; each
path runs ``--repeats`` times, alternating, and prints the median and every pair's ratio.
Which side runs first rotates too (with one data path: the bare loop in even repeats, Copycat
in odd ones): with the bare loop always first, Copycat always ran right after the bare run's
traffic and its topic's read-back. So ``--repeats`` is a multiple of the runs in a repeat
(2 with one data path, 3 with both), each side first equally often: on the dev broker the
1 KiB source's pairs alternated, 0.84-0.93 when the bare loop ran first in a repeat and
1.02-1.21 when Copycat did (a repeat's first run is the faster), and with 9 repeats of two
runs the bare loop ran first five times and Copycat four, so the bare loop's median was its
slowest first run and Copycat's its fastest second one (docs/benchmarks.md, twenty-second
round).

Each timed bare loop runs in a fresh interpreter of its own, started as a plugin host is (the
same glibc malloc settings and GC threshold; :func:`in_fresh_process`), as Copycat's data path
runs in a plugin host started for its run: with the bare loop in this long-lived process, only
Copycat's heap grew (page faults, fresh pages) while its clock ran. Untimed loops (warm-ups,
filling the sinks' topic) still run here.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Message, Producer, TopicPartition  # noqa: E402

from core.bundled import ensure_bundled_plugins  # noqa: E402
from core.dev.broker import DevBroker  # noqa: E402
from core.kafka import SINK_CONSUMER_DEFAULTS, SOURCE_PRODUCER_DEFAULTS  # noqa: E402
from core.offsets import MemoryOffsetStore  # noqa: E402
from core.plugins import PluginCatalogue  # noqa: E402
from core.status import State  # noqa: E402
from core.worker import Worker  # noqa: E402
from isolation import allocator  # noqa: E402
from tests.support.apache_kafka import ApacheKafka, KafkaCluster  # noqa: E402
from tests.support.jvm import BENCH_JVM_FLAGS  # noqa: E402

WORKER_PROPS = {
    "key.converter": "StringConverter",
    "value.converter": "StringConverter",
    "consumer.session.timeout.ms": "6000",
    "consumer.heartbeat.interval.ms": "1000",
}
# A source is timed to its committed end offset, so its worker commits every 100 ms. Sinks
# keep Kafka's default interval (60 s): a commit flushes and fsyncs the output file, which
# the bare loop never does, and a 100 ms interval would time fsyncs rather than the path.
SOURCE_WORKER_PROPS = {**WORKER_PROPS, "offset.flush.interval.ms": "100"}
# Each path is timed this many times, bare and Copycat alternating; medians are printed. Nine:
# single pairs on this shared machine range from 0.5x to 1.5x (a broker pause, another
# process); a median of three still moved by 0.2 between full runs, and one of five by
# 0.1-0.25 for the 1 KiB source, which the broker paces (both sides send the same ~1 MB
# requests, one in flight, and the broker's own CPU per run varied by 1.6x between
# identical runs: docs/benchmarks.md, seventh round). Rounded up to a multiple of the runs in a
# repeat (see the module docstring): 10 with one data path, 9 with both.
REPEATS = 9
# The bare loop's name among the runs of a repeat (see in_turn).
BARE = "bare"
# Rounds of each input (100 B and 1 KiB records) produced and read back by the bare loops,
# untimed, before Apache Kafka's first timed run. Its JIT compiler keeps working on the produce
# and fetch paths for the first ~1.5 GB: in the first three 250,000 x 1 KiB runs of a fresh
# broker its C2 threads took 0.1-0.6 CPU s of each ~1 s run, and identical bare runs differed
# by up to 1.7x; from the fourth on, 0.01-0.09 CPU s and within 10 % of each other (measured
# with per-thread CPU of the JVM, docs/benchmarks.md "Kafka Connect's producer settings").
# Two rounds of COUNTS move ~1.4 GB.
JVM_WARM_UP_ROUNDS = 2
# Records per timed source run: 2,000,000 x 100 B and 500,000 x 1 KiB, so that a run lasts
# 2-3 s. At 400,000 / 100,000 runs of 0.3-0.8 s let a 50 ms hiccup or the clock's start and
# end points move a ratio by 10 % or more; at 1,000,000 / 250,000 single pairs of one cell
# still ranged 0.57-2.06 (a broker and two or three of our processes share 2 cores, and who
# gets a core when decided a ~1 s run).
COUNTS = ((100, 2_000_000), (1024, 500_000))
# A sink reads this many copies of the input (the records Copycat's first source run wrote,
# then the same lines again from the bare producer, untimed), so that its runs last 2-3 s as
# the sources' do. Sinks move records 2-4x faster than sources: one copy made runs of
# 0.5-0.7 s; with two, Apache Kafka's 1 KiB sink ran 0.8-0.9 s (1.2M records/s) and its pairs
# ranged 0.75-1.62 (docs/benchmarks.md, twenty-third round). Four: 1.7-3.8 s a run.
SINK_COPIES = 4
# The data paths a run compares side by side (task.data.path, docs/architecture.md).
DATA_PATHS = ("host", "worker")
# The bare producer is told to report failed deliveries only (a client-side reporting choice:
# what it sends is what Copycat's producer sends). Copycat's producer does the same unless a
# task overrides commit_record() (core/runtime/source.py).
BARE_PRODUCER_REPORTING = {"delivery.report.only.error": True}
# Bytes read from the input file at once by the bare source loop, split into lines in one call.
READ_CHUNK = 1 << 20
# Records per bare consume() call: Copycat's sink hands at most this many to one put()
# (core/runtime/sink.py's MAX_RECORDS_PER_PUT).
MAX_RECORDS_PER_PUT = 2_000
# How long the bare source waits for room when librdkafka's queue is full (as Copycat's loop).
QUEUE_FULL_WAIT_S = 0.05
# How long Copycat's source task waits on its empty file before the data is appended: its
# producer connects and learns the topic's metadata (an idempotent one also asks for a
# producer id, 0.5 s on the dev broker), as the bare loop's untimed first record does.
PRODUCER_READY_WAIT_S = 1.5
# How often this process looks at Copycat's progress and committed offsets (it only decides
# when a run is over; the timing itself comes from the loops' own progress points). Not
# faster: this process is Copycat's worker, and its CPU counts as Copycat's, while the bare
# loops run unobserved. At 5 ms this thread took 9-42 ns per 1 KiB record on Apache Kafka's
# sink (1-3 % of Copycat's CPU, on cores the broker and the host were short of; 0-11 at 50
# ms, bench/sink_threads.py, docs/benchmarks.md), and a loop in a plugin host reports its
# progress once a slice (core/runtime/hosted.py's RUN_SLICE_S, 50 ms) anyway.
POLL_S = 0.05
# FileStreamSource's records per poll() (Kafka's default is 2000).
SOURCE_BATCH = "5000"

# A broker is idle (see Settle) once it uses no more than this many cores over a window; an
# idle Apache Kafka uses ~0.01, the dev broker less. Waits end after SETTLE_MAX_S regardless.
SETTLE_IDLE_CORES = 0.05
SETTLE_WINDOW_S = 0.2
SETTLE_MAX_S = 30.0
# Apache Kafka deletes a deleted topic's files log.segment.delete.delay.ms later (60 s by
# default): in the middle of a later timed run, ~500 MB of page cache dropped by its threads.
# At 0 it deletes them right away, while Settle waits for it.
BENCH_BROKER_SETTINGS = {"log.segment.delete.delay.ms": "0"}
# A timed run during which Apache Kafka's JIT compiler threads (C1 and C2) used more CPU than
# this timed the broker's compiler as much as the client, and is run again, for either side.
# Why: with the warm-up done and the broker idle before each run, C2 still compiled for 0.2-0.6
# CPU s in some 1 KiB source runs of both sides (the 2 cores then had a third busy thread)
# and those runs were 10-25 % slower than the quiet ones of the same side, while quiet runs
# spent 0.01-0.05 s there (per-thread CPU of the JVM, docs/benchmarks.md, thirteenth round).
JIT_QUIET_CPU_S = 0.1
# How often one run is repeated for that at most; the last attempt counts whatever happened.
JIT_MAX_REPEATS = 3
# The JVM's compiler threads are named "C1 CompilerThread<n>" and "C2 CompilerThread<n>"
# (/proc/<pid>/task/<tid>/comm keeps their first 15 characters).
JIT_THREAD_PREFIXES = ("C1 CompilerThre", "C2 CompilerThre")
# Steps of calibrate()'s loop: ~10 ms on this machine.
CALIBRATION_STEPS = 200_000

# How long the last-record watcher's fetch waits at the broker for its record: the watcher's
# stamp is at most this late (and costs the broker a request per period while it waits).
TAIL_FETCH_WAIT_MS = 5
# How long a watcher may take to start (a fresh interpreter importing this module) and then
# to see the last record once the run is over.
TAIL_START_S = 60.0
TAIL_SEEN_S = 120.0

Progress = tuple[int, float]
# /proc/<pid>/stat counts CPU time in these ticks.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) used so far by process ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def cpu_s(pids: Iterable[int | None] = ()) -> float:
    """CPU seconds (user + system, all threads) used so far by this process and ``pids``
    (plugin hosts). Work done, whatever else the machine runs: on a shared machine the
    rates swing with other load, CPU time per record much less."""
    return time.process_time() + sum(process_cpu_s(pid) for pid in pids if pid is not None)


def children(pid: int) -> list[int]:
    """Pids of ``pid``'s child processes."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


class Settle:
    """Waits, before each timed run, until the broker is idle: work left over from an earlier
    run (the dev broker freeing deleted topics, Apache Kafka deleting their files, its garbage
    collector and JIT compiler) is nobody's run's cost, and used to land in whichever run came
    next. So is the kernel writing back what earlier runs wrote (the broker's log, the sinks'
    output): ext4 here holds ~1 GB of dirty pages after a few runs and writes them back 30 s
    later (vm.dirty_expire_centisecs), in the middle of some later run (one such Kafka 1 KiB
    sink run was 19 % slower than its side's median); so the file systems are synced first,
    untimed. Counts how long it waited and how often it gave up (SETTLE_MAX_S)."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.waited_s = 0.0
        self.waits = 0
        self.gave_up = 0

    def _busy(self) -> float:
        """Cores the broker used over the last SETTLE_WINDOW_S."""
        before = sum(process_cpu_s(pid) for pid in self.pids)
        time.sleep(SETTLE_WINDOW_S)
        return (sum(process_cpu_s(pid) for pid in self.pids) - before) / SETTLE_WINDOW_S

    def __call__(self) -> None:
        started = time.monotonic()
        os.sync()  # see the class docstring: earlier runs' dirty pages are written back now
        while self._busy() > SETTLE_IDLE_CORES:
            if time.monotonic() - started > SETTLE_MAX_S:
                self.gave_up += 1
                break
        self.waited_s += time.monotonic() - started
        self.waits += 1

    def summary(self) -> str:
        gave_up = f", gave up {self.gave_up} times" if self.gave_up else ""
        return (
            f"broker idle before each run: waited {self.waited_s:.1f} s over {self.waits} "
            f"runs{gave_up}"
        )


class Compiler:
    """The broker's JIT compiler threads, watched across each timed run (JIT_QUIET_CPU_S). The
    dev broker is native code: it has none, and no run is ever repeated there."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.repeated: dict[str, int] = {}
        self.kept_busy: dict[str, int] = {}
        self._before: dict[tuple[int, str], int] = {}

    def _threads(self) -> dict[tuple[int, str], int]:
        """CPU nanoseconds so far of every compiler thread, by (pid, tid)."""
        found = {}
        for pid in self.pids:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    comm = Path(f"/proc/{pid}/task/{tid}/comm").read_text()
                    if comm.startswith(JIT_THREAD_PREFIXES):
                        schedstat = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text()
                        found[(pid, tid)] = int(schedstat.split()[0])
                except OSError:  # the JVM ends idle compiler threads
                    continue
        return found

    def start(self) -> None:
        self._before = self._threads()

    def run_again(self, who: str, attempt: int) -> bool:
        """Whether the run just timed must be repeated: its broker compiled for more than
        JIT_QUIET_CPU_S and it was not the last attempt. (A compiler thread that ended during
        the run is not counted: the JVM ends only idle ones.)"""
        after = self._threads()
        used = sum(ns - self._before.get(key, 0) for key, ns in after.items()) / 1e9
        if used <= JIT_QUIET_CPU_S:
            return False
        if attempt >= JIT_MAX_REPEATS:
            self.kept_busy[who] = self.kept_busy.get(who, 0) + 1
            return False
        self.repeated[who] = self.repeated.get(who, 0) + 1
        print(f"  ({who}: the broker's JIT compiled for {used:.2f} CPU s: run again)", flush=True)
        return True

    def attempts(self, who: str, machine: Machine, first: bool) -> Iterator[int]:
        """The attempts at one timed run of ``who``, each noted by ``machine``; the caller
        runs it (settling, then calling :meth:`start`, right before its timed work begins:
        :func:`ready`). Another attempt follows only if :meth:`run_again` says so:
        ``machine`` then forgets the discarded one."""
        for attempt in range(JIT_MAX_REPEATS + 1):
            machine.before_run(who, first)
            yield attempt
            if not self.run_again(who, attempt):
                return
            machine.forget_last(who)

    def summary(self) -> str:
        """Runs repeated in this cell, per side (and runs kept despite the compiler)."""
        if not self.repeated and not self.kept_busy:
            return ""
        kept = (
            f"; kept busy after {JIT_MAX_REPEATS} repeats: {self.kept_busy}"
            if self.kept_busy
            else ""
        )
        return f"; runs repeated for the broker's JIT: {self.repeated}{kept}"


class Machine:
    """What each run of one cell ran under: its place in its repeat (first, or after another
    side's run) and :func:`calibrate`'s figure just before it."""

    def __init__(self) -> None:
        self.firsts: dict[str, list[bool]] = {}
        self.calibrations: list[float] = []

    def before_run(self, who: str, first: bool) -> None:
        self.firsts.setdefault(who, []).append(first)
        self.calibrations.append(calibrate())

    def forget_last(self, who: str) -> None:
        """The last run of ``who`` is repeated (Compiler): only its repeat counts."""
        self.firsts[who].pop()
        self.calibrations.pop()

    def summary(self, bare_cpu: list[float], cc_cpu: dict[str, list[float]]) -> str:
        """CPU per record (median, us) of each side's runs that came first in their repeat and
        of those that came after another, and the calibration's range."""
        parts = []
        for who, cpu in [(BARE, bare_cpu), *cc_cpu.items()]:
            first = [c for c, was in zip(cpu, self.firsts[who], strict=True) if was]
            after = [c for c, was in zip(cpu, self.firsts[who], strict=True) if not was]
            parts.append(f"{who} {median_us(first)} / {median_us(after)}")
        return (
            f"{'':<34}(CPU us/record ran first / after another: {', '.join(parts)}; "
            f"calibration {min(self.calibrations):.1f}-{max(self.calibrations):.1f} ns)"
        )


def median_us(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e6:.2f}" if values else "-"


def calibrate() -> float:
    """Nanoseconds per step of a fixed pure-Python loop (best of three): how fast this machine
    runs Python right now. Slow phases of a shared machine (~2x the CPU per record on both
    sides) show here, so a table's runs can be told apart."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(CALIBRATION_STEPS):
            total += i & 7
        best = min(best, time.perf_counter() - started)
    return best / CALIBRATION_STEPS * 1e9


def make_input(path: Path, count: int, size: int) -> bytes:
    """Write the input file, and have it on disk before any run reads it (no writeback of
    its pages during a timed span)."""
    body = "x" * (size - 9)
    data = "".join(f"{i:08d} {body}\n" for i in range(count)).encode()
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return data


def wait_until(predicate: Callable[[], Any], timeout_s: float = 300) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark did not finish in time")
        time.sleep(POLL_S)
    return result


def rate(first: Progress, last: Progress) -> tuple[float, int]:
    """``(seconds, records)`` between two progress points."""
    return last[1] - first[1], last[0] - first[0]


def append_span(bootstrap: str, topic: str, count: int) -> tuple[float, int]:
    """``(seconds, records)`` from the broker's first append stamp to its last, counting the
    records after the first stamp (LogAppendTime: one stamp per appended batch)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"span-{topic}", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        first_stamp, in_first = None, 0
        while True:
            messages = [m for m in consumer.consume(1000, 5.0) if m.error() is None]
            assert messages, f"{topic}: no records to time"
            for message in messages:
                if first_stamp is None:
                    first_stamp = message.timestamp()[1]
                if message.timestamp()[1] != first_stamp:
                    break
                in_first += 1
            else:
                continue
            break
        consumer.assign([TopicPartition(topic, 0, count - 1)])
        (last,) = wait_until(lambda: [m for m in consumer.consume(1, 1.0) if m.error() is None])
        assert last.offset() == count - 1, f"{topic}: last offset {last.offset()}"
        return (last.timestamp()[1] - first_stamp) / 1000, count - in_first
    finally:
        consumer.close()


def _watch_last_record(
    bootstrap: str, topic: str, last_offset: int, by_watermark: bool, reply: Connection
) -> None:
    """Runs in a process of its own (see :class:`LastRecordWatch`): sends "ready" once its
    consumer is connected, then the ``time.monotonic()`` at which the record at
    ``last_offset`` of ``topic``'s partition 0 arrived, or (``by_watermark``, Apache Kafka,
    which answers a fetch past the end with an error rather than waiting) at which the
    partition's high watermark, asked every TAIL_FETCH_WAIT_MS, passed it."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"tail-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",  # never skip to the end: an error, not a wrong stamp
            "fetch.wait.max.ms": TAIL_FETCH_WAIT_MS,
        }
    )
    try:
        consumer.list_topics(topic, timeout=TAIL_START_S)
        if by_watermark:
            partition = TopicPartition(topic, 0)
            reply.send("ready")
            while consumer.get_watermark_offsets(partition, TAIL_SEEN_S, cached=False)[1] <= (
                last_offset
            ):
                time.sleep(TAIL_FETCH_WAIT_MS / 1000)
            reply.send(time.monotonic())
            return
        consumer.assign([TopicPartition(topic, 0, last_offset)])
        reply.send("ready")
        while True:
            for message in consumer.consume(1, 1.0):
                if message.error() is not None:
                    reply.send(f"{topic}: {message.error()}")
                    return
                if message.offset() == last_offset:
                    reply.send(time.monotonic())
                    return
    finally:
        consumer.close()


class LastRecordWatch:
    """When a topic's last record becomes readable: the end of a source's run on the dev broker,
    the same for the bare loop and Copycat. The watcher is a process of its own (a spawned
    interpreter), so neither side shares a GIL with it; CLOCK_MONOTONIC is the machine's, so
    its stamp compares with the loops' progress points."""

    def __init__(self, bootstrap: str, topic: str, count: int, by_watermark: bool) -> None:
        context = multiprocessing.get_context("spawn")
        self._reply, theirs = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_watch_last_record,
            args=(bootstrap, topic, count - 1, by_watermark, theirs),
            daemon=True,
        )

    def __enter__(self) -> LastRecordWatch:
        self._process.start()
        assert self._receive(TAIL_START_S) == "ready"
        return self

    def _receive(self, timeout_s: float) -> Any:
        if not self._reply.poll(timeout_s):
            raise TimeoutError("the last-record watcher did not answer in time")
        answer = self._reply.recv()
        if isinstance(answer, str) and answer != "ready":
            raise RuntimeError(f"last-record watcher: {answer}")
        return answer

    def seen_at(self) -> float:
        """The watcher's stamp of the last record (waits for it)."""
        stamp: float = self._receive(TAIL_SEEN_S)
        return stamp

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()


def _run_bare(loop: Callable[..., Any], args: tuple[Any, ...], conn: Connection) -> None:
    """In a fresh process (see :func:`in_fresh_process`): the loop, with a plugin host's GC
    setting; its ``on_start`` asks the parent to settle the broker and waits for the word."""

    def on_start() -> None:
        conn.send("ready")
        assert conn.recv() == "go"

    allocator.tune_gc()
    try:
        conn.send(("done", loop(*args, on_start=on_start)))
    except BaseException as exc:  # the parent raises it: the run failed
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))


def in_fresh_process(
    loop: Callable[..., Any], *args: Any, on_start: Callable[[], None] = lambda: None
) -> Any:
    """``loop(*args, on_start=...)`` in a fresh interpreter of its own, started as a plugin
    host is (with its glibc malloc settings, isolation/allocator.py, and its GC threshold),
    and its answer. ``on_start`` runs here, when the loop is ready for its first record.

    Why: Copycat's data path runs in a plugin host started for the run, whose heap grows
    while the clock runs (thousands of page faults per 1 KiB run); a bare loop in this
    long-lived process reused a heap earlier runs had grown. Both now start with a fresh
    process and the same allocator settings (docs/benchmarks.md, eighteenth round)."""
    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    saved = dict(os.environ)
    os.environ.update(allocator.child_environment(os.environ))
    try:
        process = context.Process(target=_run_bare, args=(loop, args, theirs), daemon=True)
        process.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        answer = mine.recv()
        if answer == "ready":
            on_start()
            mine.send("go")
            answer = mine.recv()
        state, result = answer
        if state != "done":
            raise RuntimeError(f"bare loop in its own process: {result}")
        return result
    finally:
        process.join(30)
        if process.is_alive():
            process.kill()


def bare_source(
    bootstrap: str, path: Path, topic: str, on_start: Callable[[], None] = lambda: None
) -> tuple[Progress, float, float, float]:
    """The cheapest correct producer loop: one ``produce()`` per line and nothing else per
    record, with Copycat's producer settings. librdkafka reports failed deliveries only, so
    acks cost no Python work: a record is acknowledged once flush() has returned with it
    neither failed nor still queued. One record to ``<topic>-warmup`` goes first, untimed: a
    producer's first delivery waits for its connection and metadata (and, idempotent, its
    producer id). ``on_start`` is called right before the first timed record. Returns the first
    progress point (after the first chunk of lines), when the final flush started and when it
    returned, and CPU seconds per record after the first chunk."""
    failures: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            **SOURCE_PRODUCER_DEFAULTS,
            **BARE_PRODUCER_REPORTING,
            "on_delivery": lambda err, msg: failures.append(err),
        }
    )
    producer.produce(f"{topic}-warmup", b"warm-up")
    assert producer.flush(60) == 0 and not failures, f"bare producer warm-up failed: {failures}"
    on_start()
    produce = producer.produce
    handed = 0
    points: list[Progress] = []
    with open(path, "rb") as fh:
        rest = b""
        while chunk := fh.read(READ_CHUNK):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()  # a partial last line waits for the next chunk
            for line in lines:
                try:
                    produce(topic, line)
                except BufferError:  # librdkafka's queue is full: wait for the broker
                    while True:
                        producer.poll(QUEUE_FULL_WAIT_S)
                        try:
                            produce(topic, line)
                            break
                        except BufferError:
                            continue
            handed += len(lines)
            points.append((handed, time.monotonic()))
            if len(points) == 1:
                cpu_start = cpu_s()
        assert not rest, "input file does not end with a newline"
    started = time.monotonic()
    unsettled = producer.flush(60)
    done = time.monotonic()
    assert not failures, f"bare producer: {len(failures)} deliveries failed: {failures[0]}"
    assert unsettled == 0, f"bare producer: {unsettled} records never acknowledged"
    assert handed == points[-1][0] == path.read_bytes().count(b"\n"), "bare source lost lines"
    cpu = (cpu_s() - cpu_start) / (handed - points[0][0])
    return points[0], started, done, cpu


def copycat_source(
    worker: Worker,
    path: Path,
    source: Path,
    data: bytes,
    topic: str,
    end: Callable[[], float],
    on_start: Callable[[], None] = lambda: None,
) -> tuple[tuple[float, int], float]:
    """The timing, from the first progress point to ``end()`` (called once every record was
    handed to the producer: when the last one was delivered), and CPU seconds per record
    (worker and plugin host) over the same span. The committed end offset is then waited
    for and checked, untimed.

    The task starts on ``path``, which does not exist yet; once its producer is ready
    (PRODUCER_READY_WAIT_S), ``path`` becomes a hard link to ``source`` (``data``, the file
    the bare loop reads), so both sides read the same file, already written and in the page
    cache. (Writing the data as the task ran cost this process 0.5-1 s of CPU inside
    Copycat's timed span.) ``on_start`` is called right before the link is made."""
    name = f"bench-src-{topic}"
    worker.start_connector(
        name,
        {
            "name": name,
            "connector.class": "FileStreamSource",
            "file": str(path),
            "topic": topic,
            "batch.size": SOURCE_BATCH,
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
        },
    )
    runner = worker.start_task(name, 0, worker.task_configs(name)[0])
    assert runner.wait_started(120), "source task did not start"  # it starts on its own thread
    loop = runner.loop
    assert loop is not None, "source task failed to start"
    time.sleep(PRODUCER_READY_WAIT_S)
    on_start()
    os.link(source, path)  # the task opens it on its next poll (it looks every 0.1 s)
    count = data.count(b"\n")
    first = wait_until(lambda: loop.progress[0] > 0 and loop.progress)
    hosts = [runner.host.pid if runner.host is not None else None]
    cpu_start = cpu_s(hosts)
    wait_until(lambda: loop.progress[0] >= count)
    done = end()
    cpu = (cpu_s(hosts) - cpu_start) / (count - first[0])
    position = {"position": len(data)}
    wait_until(lambda: any(o == position for _, o in worker.offsets.connector_offsets(name)))
    # A loop in the plugin host reports its count with its next answer (core/runtime/hosted.py).
    sent = wait_until(lambda: loop.records_moved >= count and loop.records_moved, 10)
    worker.stop_connector(name)
    assert sent == count, f"copycat sent {sent} of {count}"
    return rate(first, (count, done)), cpu


def warm(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    """Read a topic once, untimed. The dev broker serves a topic's first read at ~160k
    records/s and later ones several times faster, so whichever sink read first would lose."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"warm-{topic}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    while seen < count:
        seen += sum(
            1 for m in consumer.consume(min(10_000, count - seen), 1.0) if m.error() is None
        )
    consumer.close()


def bare_sink(
    bootstrap: str,
    topic: str,
    out: Path,
    count: int,
    on_start: Callable[[], None] = lambda: None,
    on_window: Callable[[], None] = lambda: None,
) -> tuple[tuple[float, int], float]:
    """The cheapest correct consumer loop: batches of up to MAX_RECORDS_PER_PUT, each written
    with one call, with the sink consumer's own settings (with librdkafka's default
    fetch.queue.backoff.ms of 1 s the loop idles a second whenever its queue fills).
    ``on_start`` is called once the consumer is made, before it is assigned its partition
    (librdkafka starts fetching on assignment); ``on_window`` where its CPU window opens
    and where it closes (bench/sink_threads.py)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bare-{topic}", **SINK_CONSUMER_DEFAULTS}
    )
    on_start()
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    points: list[Progress] = []
    with open(out, "wb") as fh:
        while seen < count:
            # Never ask for more than remain: librdkafka's consume() waits for the whole count.
            messages = consumer.consume(min(MAX_RECORDS_PER_PUT, count - seen), 1.0)
            # The accessors mapped over the messages (as Copycat's sink reads them): cheaper
            # than a method call per message in a comprehension.
            if any(map(Message.error, messages)):
                messages = [m for m in messages if m.error() is None]
            values = list(map(Message.value, messages))
            if values:
                values.append(b"")  # the last line's newline
                fh.write(b"\n".join(values))
                seen += len(values) - 1
                points.append((seen, time.monotonic()))
                if len(points) == 1:
                    cpu_start = cpu_s()
                    on_window()
        fh.flush()
    on_window()
    cpu = (cpu_s() - cpu_start) / (points[-1][0] - points[0][0])
    consumer.close()
    return rate(points[0], points[-1]), cpu


# A per-record chain that makes a sink task CPU-bound in its plugin host: wrap each line in a
# map, add the offset and partition, mask the partition again.
CHAIN = {
    "transforms": "hoist,insert,mask",
    "transforms.hoist.type": "HoistField$Value",
    "transforms.hoist.field": "line",
    "transforms.insert.type": "InsertField$Value",
    "transforms.insert.offset.field": "offset",
    "transforms.insert.partition.field": "partition",
    "transforms.mask.type": "MaskField$Value",
    "transforms.mask.fields": "partition",
}


def copycat_sink(
    worker: Worker,
    topic: str,
    out: Path,
    count: int,
    tasks: int = 1,
    extra: dict[str, str] | None = None,
    label: str = "",
    on_start: Callable[[], None] = lambda: None,
    on_window: Callable[[], None] = lambda: None,
) -> tuple[tuple[float, int], float]:
    """``(seconds, records)`` across ``tasks`` loops: from the earliest first progress point
    to the latest last one, counting what moved after each loop's first point; and CPU
    seconds per record (worker and plugin hosts) after the first point seen. The tasks start
    paused (their consumers join the group, their partitions stay paused); ``on_start`` is
    called once each reports PAUSED, and then they are resumed; ``on_window`` where the CPU
    window opens and where it closes (bench/sink_threads.py)."""
    name = f"bench-sink-{topic}-{tasks}{label}"
    worker.start_connector(
        name,
        {
            "name": name,
            "connector.class": "FileStreamSink",
            "topics": topic,
            "file": str(out),
            "tasks.max": str(tasks),
            **(extra or {}),
        },
    )
    files = [out.with_suffix(f".{i}") for i in range(tasks)]
    for task_id, cfg in enumerate(worker.task_configs(name)):
        runner = worker.start_task(name, task_id, dict(cfg, file=str(files[task_id])), paused=True)
        assert runner.wait_started(120), "sink task did not start"
    wait_until(
        lambda: all(
            status.state is State.PAUSED for status in worker.status.tasks_of(name).values()
        ),
        60,
    )
    on_start()
    worker.pause(name, False)
    runners = list(worker.connectors[name].tasks.values())
    loops = [runner.loop for runner in runners]
    assert all(loops), "a sink task failed to start"
    hosts = [runner.host.pid if runner.host is not None else None for runner in runners]
    firsts: list[Progress | None] = [None] * tasks
    cpu_start, moved_before = 0.0, 0
    while (moved := sum(loop.progress[0] for loop in loops)) < count:
        if moved and not cpu_start:
            cpu_start, moved_before = cpu_s(hosts), moved
            on_window()
        for i, loop in enumerate(loops):
            if firsts[i] is None and loop.progress[0] > 0:
                firsts[i] = loop.progress
        time.sleep(POLL_S)
    on_window()
    cpu = (cpu_s(hosts) - cpu_start) / (count - moved_before)
    # Loops that moved nothing (on Apache Kafka one task may take both partitions and finish
    # before the other joins the group) have no points: (0, 0.0).
    moved_loops = [
        (first or last, last)
        for first, last in zip(firsts, [lp.progress for lp in loops], strict=True)
        if last[0]
    ]
    if len(moved_loops) < tasks:
        print(f"  ({name}: {tasks - len(moved_loops)} of {tasks} tasks moved no record)")
    starts = [start for start, _ in moved_loops]
    lasts = [last for _, last in moved_loops]
    worker.stop_connector(name)
    lines = 0
    for f in files:
        with open(f, "rb") as fh:
            lines += sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    assert lines == count, f"sink wrote {lines} lines, expected {count}"
    seconds = max(t for _, t in lasts) - min(t for _, t in starts)
    return (seconds, count - sum(n for n, _ in starts)), cpu


def report(
    label: str,
    mb_per_record: float,
    bare: list[tuple[float, int]],
    cc: list[Any],
    cpu: tuple[list[float], list[float]],
) -> None:
    """One table row: medians of the alternating runs and their ratio (to three places: two
    showed 0.8991 as 0.90 in the twenty-third round), every pair's ratio in the order they
    ran, and the median CPU time per record of each side (``cpu``: bare's, Copycat's); then
    each pair's CPU times, in the same order: a phase of the machine or of one side shows as
    a stretch of pairs (docs/benchmarks.md, twenty-second round, saw one last a whole run).
    (Rounds up to the twenty-first printed the ratios sorted by Copycat's rate, which made
    them seem to rise through a run.)"""
    bare_rates = [n / s for s, n in bare]
    cc_rates = [n / s for s, n in cc]
    b, c = statistics.median(bare_rates), statistics.median(cc_rates)
    pairs = ", ".join(f"{x / y:.2f}" for x, y in zip(cc_rates, bare_rates, strict=True))
    bare_us, cc_us = (statistics.median(side) * 1e6 for side in cpu)
    print(
        f"{label:<34}{c:>14,.0f}{c * mb_per_record:>8.1f}{b:>14,.0f}{b * mb_per_record:>8.1f}"
        f"{c / b:>8.3f}   (median of {len(cc)}; pairs {pairs}; CPU us/record {cc_us:.2f} vs "
        f"{bare_us:.2f}: {bare_us / cc_us:.2f})",
        flush=True,
    )
    by_pair = ", ".join(f"{x * 1e6:.2f}/{y * 1e6:.2f}" for x, y in zip(cpu[1], cpu[0], strict=True))
    print(f"{'':<34}(CPU us/record by pair, Copycat/bare: {by_pair})")


def ms(seconds: list[float]) -> str:
    return ", ".join(f"{s * 1000:.0f}" for s in seconds)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def broker(kind: str, work: Path) -> Iterator[tuple[KafkaCluster, list[int]]]:
    """The cluster, and the pids of the broker's processes (see Settle)."""
    if kind == "dev":
        with DevBroker() as dev:
            yield KafkaCluster(dev.bootstrap_servers, kind="dev-broker"), [dev.pid]
        return
    kafka = ApacheKafka(
        work / "apache-kafka", overrides=BENCH_BROKER_SETTINGS, jvm_flags=BENCH_JVM_FLAGS
    ).start(os.getpid())
    try:
        # The keeper's child is the JVM.
        yield KafkaCluster(kafka.bootstrap_servers), [kafka.pid, *children(kafka.pid)]
    finally:
        kafka.stop()


def main() -> None:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="4x smaller data sets")
    parser.add_argument("--broker", choices=["dev", "kafka", "both"], default="both")
    parser.add_argument(
        "--data-path",
        choices=["both", *DATA_PATHS, "auto"],
        default="both",
        help="task.data.path of the Copycat runs; both (default): host and worker side by side",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        help="a multiple of the runs in a repeat (2 with one data path, 3 with both); "
        f"default: {REPEATS} rounded up to one",
    )
    parser.add_argument("--no-scaling", action="store_true", help="skip the task scaling runs")
    args = parser.parse_args()
    modes = list(DATA_PATHS) if args.data_path == "both" else [args.data_path]
    runs = 1 + len(modes)  # the bare loop and each data path, in turn (see in_turn)
    if args.repeats is None:
        args.repeats = -(-REPEATS // runs) * runs
    elif args.repeats < runs or args.repeats % runs:
        parser.error(
            f"--repeats {args.repeats}: give a multiple of {runs} (the runs in a repeat), so "
            "that each side runs first equally often"
        )
    # Plugin venvs, output files and a broker's log take ~1 GB: removed however the run ends.
    with tempfile.TemporaryDirectory(prefix="copycat-pipeline-bench-") as tmp:
        work = Path(tmp)
        plugin_path = work / "plugins"
        ensure_bundled_plugins(plugin_path)
        for kind in ["dev", "kafka"] if args.broker == "both" else [args.broker]:
            with broker(kind, work / kind) as (cluster, broker_pids):
                run(cluster, Settle(broker_pids), work / kind, plugin_path, modes, args)


@contextmanager
def last_record(cluster: KafkaCluster, topic: str, count: int) -> Iterator[Callable[[], float]]:
    """A source run's end: the stamp of a :class:`LastRecordWatch`. On Apache Kafka the
    broker's append stamps time the run (:func:`append_span`), and the watch only ends
    Copycat's CPU span: at its last hand-off, librdkafka still held up to 100,000 records
    (100 MB at 1 KiB) to send, which the bare loop's span (to its flush's return) includes."""
    by_watermark = cluster.kind == "apache-kafka"
    with LastRecordWatch(cluster.bootstrap_servers, topic, count, by_watermark) as watch:
        yield watch.seen_at


def warm_up_broker(
    cluster: KafkaCluster,
    work: Path,
    scale: int,
    workers: Iterable[tuple[Worker, Worker]] = (),
) -> None:
    """Apache Kafka only (the dev broker is native code): run its produce and fetch paths
    until the JIT has compiled them (JVM_WARM_UP_ROUNDS), untimed, with the bare loops and
    inputs the timed runs use, then once with Copycat's source and sink for each pair of
    ``workers`` (source, sink); the topics are deleted afterwards.

    Why Copycat's paths too: with the bare loops alone, Copycat's first two source runs on a
    warm broker ran at half the rate of every later run of either side (1 KiB: 190-280k
    against 400-740k records/s, in four series of ten), while the broker's compiler threads
    took 0.25-0.57 CPU s of each (0.04-0.06 in later runs): its JIT was still compiling what
    Copycat's clients (topic creation, their requests) first asked of it."""
    if cluster.kind != "apache-kafka":
        return
    bootstrap = cluster.bootstrap_servers
    started = time.monotonic()
    topics = []
    out = work / "warm-up-out.txt"
    for size, count in ((size, count // scale) for size, count in COUNTS):
        path = work / f"warm-up-{size}.txt"
        data = make_input(path, count, size)
        for round_ in range(JVM_WARM_UP_ROUNDS):
            topic = f"warm-up-{size}-{round_}"
            cluster.create_topic(topic, 1)
            cluster.create_topic(f"{topic}-warmup", 1)
            topics += [topic, f"{topic}-warmup"]
            bare_source(bootstrap, path, topic)
            bare_sink(bootstrap, topic, out, count)
        for index, (source_worker, sink_worker) in enumerate(workers):
            topic = f"warm-up-{size}-copycat-{index}"
            cluster.create_topic(topic, 1)
            topics.append(topic)
            link = work / f"{topic}.txt"
            with last_record(cluster, topic, count) as seen_at:
                copycat_source(source_worker, link, path, data, topic, seen_at)
            link.unlink()
            copycat_sink(sink_worker, topic, out, count, label="-warm-up")
            out.with_suffix(".0").unlink()
        path.unlink()
    out.unlink()
    cluster.delete_topics(topics)
    print(f"(broker warmed up: {time.monotonic() - started:.0f} s untimed)", flush=True)


def ready(settle: Settle, compiler: Compiler) -> Callable[[], None]:
    """A run's ``on_start``: wait until the broker is idle, then start watching its compiler,
    both after the side's own setup (see the module docstring)."""

    def go() -> None:
        settle()
        compiler.start()

    return go


def in_turn(modes: list[str], rep: int) -> list[str]:
    """The runs of repeat ``rep`` (the bare loop and each data path) in turn: rotated, so none
    always runs first, or always right after another's broker traffic (its topic read back,
    the broker's garbage and the kernel's writeback of what it wrote)."""
    shift = rep % len(modes)
    return modes[shift:] + modes[:shift]


def run(
    cluster: KafkaCluster,
    settle: Settle,
    work: Path,
    plugin_path: Path,
    modes: list[str],
    args: argparse.Namespace,
) -> None:
    scale = 4 if args.quick else 1
    catalogue = PluginCatalogue.scan([plugin_path])
    bootstrap = cluster.bootstrap_servers
    client_props = {"bootstrap.servers": bootstrap}
    # One pair of workers per data path, so each mode's tasks run exactly as a worker
    # configured with it runs them.
    sources, sinks = {}, {}
    for mode in modes:
        path = {"task.data.path": mode}
        sources[mode] = Worker(
            f"bench-sources-{mode}",
            {**SOURCE_WORKER_PROPS, **path},
            catalogue,
            MemoryOffsetStore(),
            client_props=client_props,
        )
        sinks[mode] = Worker(
            f"bench-{mode}",
            {**WORKER_PROPS, **path},
            catalogue,
            MemoryOffsetStore(),
            client_props=client_props,
        )
    print(
        f"\n{cluster.kind}, task.data.path={' and '.join(modes)}: bare loops hand each record to "
        "the client with nothing else per record;\nsources timed to "
        + ("the broker's append stamps" if cluster.kind == "apache-kafka" else "delivery")
        + "\n"
        f"{'path':<34}{'copycat rec/s':>14}{'MB/s':>8}{'bare rec/s':>14}{'MB/s':>8}{'ratio':>8}",
        flush=True,
    )
    work.mkdir(parents=True, exist_ok=True)
    warm_up_broker(cluster, work, scale, [(sources[mode], sinks[mode]) for mode in modes])
    # The broker stamps each batch as it appends it; see the module docstring.
    stamped = {"message.timestamp.type": "LogAppendTime"}
    for size, count in ((size, count // scale) for size, count in COUNTS):
        data_path = work / f"in-{size}.txt"
        data = make_input(data_path, count, size)
        mb_per_record = len(data) / count / 1e6
        t_bare: list[tuple[float, int]] = []
        t_cc: dict[str, list[tuple[float, int]]] = {mode: [] for mode in modes}
        c_bare: list[float] = []
        c_cc: dict[str, list[float]] = {mode: [] for mode in modes}
        flushes: list[float] = []
        lags: list[float] = []  # the watcher's stamp after the bare flush returned (dev broker)
        machine, compiler = Machine(), Compiler(settle.pids)
        sink_topic = ""  # the topic Copycat's first accepted run (first data path) wrote
        for rep in range(args.repeats):
            made: list[str] = []  # this repeat's topics
            order = in_turn([BARE, *modes], rep)
            for who in order:
                base = f"bare-{size}-{rep}" if who == BARE else f"cc-{who}-{size}-{rep}"
                for attempt in compiler.attempts(who, machine, who == order[0]):
                    topic = f"{base}-again-{attempt}" if attempt else base
                    cluster.create_topic(topic, 1, stamped)
                    made.append(topic)
                    if who == BARE:
                        cluster.create_topic(f"{topic}-warmup", 1)
                        made.append(f"{topic}-warmup")
                    if who == BARE:
                        with last_record(cluster, topic, count) as seen_at:
                            first, flush_started, flushed, cpu = in_fresh_process(
                                bare_source,
                                bootstrap,
                                data_path,
                                topic,
                                on_start=ready(settle, compiler),
                            )
                            seen = seen_at()
                            timing = rate(first, (count, seen))
                    else:
                        source_file = work / f"{topic}.txt"
                        with last_record(cluster, topic, count) as seen_at:
                            timing, cpu = copycat_source(
                                sources[who],
                                source_file,
                                data_path,
                                data,
                                topic,
                                seen_at,
                                on_start=ready(settle, compiler),
                            )
                        source_file.unlink()  # the connector is stopped; only the link goes
                if cluster.kind == "apache-kafka":
                    timing = append_span(bootstrap, topic, count)
                if who == BARE:
                    c_bare.append(cpu)
                    if cluster.kind != "apache-kafka":
                        lags.append(seen - flushed)
                    t_bare.append(timing)
                    flushes.append(flushed - flush_started)
                    continue
                c_cc[who].append(cpu)
                t_cc[who].append(timing)
                if not sink_topic and who == modes[0]:
                    sink_topic = topic
            # Each run's topics go once timed (the dev broker keeps them in memory), but for
            # the one the sinks read.
            cluster.delete_topics([topic for topic in made if topic != sink_topic])
        for mode in modes:
            report(
                f"source {size} B x {count} ({mode})",
                mb_per_record,
                t_bare,
                t_cc[mode],
                (c_bare, c_cc[mode]),
            )
        seen_lag = f"; last record seen {ms(lags)} ms after it returned" if lags else ""
        print(f"{'':<34}(bare loop's final flush: {ms(flushes)} ms{seen_lag})")
        print(machine.summary(c_bare, c_cc) + compiler.summary())
        # sink: everyone reads the topic Copycat's first source run wrote, then the input
        # again (SINK_COPIES), alternating
        topic = sink_topic
        cluster.create_topic(f"{topic}-warmup", 1)
        for _ in range(SINK_COPIES - 1):
            bare_source(bootstrap, data_path, topic)
        count *= SINK_COPIES
        warm(bootstrap, topic, count)
        hasher = hashlib.sha256()
        for _ in range(SINK_COPIES):
            hasher.update(data)
        expected = hasher.hexdigest()
        t_bare, t_cc = [], {mode: [] for mode in modes}
        c_bare, c_cc = [], {mode: [] for mode in modes}
        machine, compiler = Machine(), Compiler(settle.pids)
        for rep in range(args.repeats):
            order = in_turn([BARE, *modes], rep)
            for who in order:
                for attempt in compiler.attempts(who, machine, who == order[0]):
                    out = work / f"{who}-out-{size}-{rep}-{attempt}"
                    if who == BARE:
                        timing, cpu = in_fresh_process(
                            bare_sink,
                            bootstrap,
                            topic,
                            out,
                            count,
                            on_start=ready(settle, compiler),
                        )
                    else:
                        label = f"-{who}-{rep}-{attempt}"
                        timing, cpu = copycat_sink(
                            sinks[who],
                            topic,
                            out,
                            count,
                            label=label,
                            on_start=ready(settle, compiler),
                        )
                        out = out.with_suffix(".0")
                    assert digest(out) == expected, f"{who} sink output differs from input"
                    out.unlink()
                if who == BARE:
                    t_bare.append(timing)
                    c_bare.append(cpu)
                else:
                    t_cc[who].append(timing)
                    c_cc[who].append(cpu)
        cluster.delete_topics([topic, f"{topic}-warmup"])
        for mode in modes:
            report(
                f"sink {size} B x {count} ({mode})",
                mb_per_record,
                t_bare,
                t_cc[mode],
                (c_bare, c_cc[mode]),
            )
        print(machine.summary(c_bare, c_cc) + compiler.summary())
    print(f"({settle.summary()})", flush=True)
    if not args.no_scaling:
        scaling(cluster, sinks, work, scale)
    for worker in [*sinks.values(), *sources.values()]:
        worker.stop()


def scaling(cluster: KafkaCluster, sinks: dict[str, Worker], work: Path, scale: int) -> None:
    """The sink with 1 and 2 tasks on a 2-partition topic, plain and with the SMT chain, for
    each data path."""
    bootstrap = cluster.bootstrap_servers
    count = 400_000 // scale
    cluster.create_topic("scale", 2)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        while True:
            try:
                producer.produce("scale", b"%08d " % i + b"x" * 91, partition=i % 2)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(60)
    warm(bootstrap, "scale", count, partitions=2)
    for mode, worker in sinks.items():
        rates = []
        for tasks, extra, label in (
            (1, None, ""),
            (2, None, ""),
            (1, CHAIN, "-chain"),
            (2, CHAIN, "-chain"),
        ):
            (seconds, records), _ = copycat_sink(
                worker,
                "scale",
                work / f"scale-{mode}-{tasks}{label}",
                count,
                tasks,
                extra,
                f"{label}-{mode}",
            )
            rates.append(records / seconds)
        print(
            f"sink 100 B x {count}, 2 partitions ({mode}): 1 task {rates[0]:,.0f} rec/s, "
            f"2 tasks {rates[1]:,.0f} rec/s, scaling {rates[1] / rates[0]:.2f}x\n"
            f"  same with a 3-SMT chain:      1 task {rates[2]:,.0f} rec/s, 2 tasks "
            f"{rates[3]:,.0f} rec/s, scaling {rates[3] / rates[2]:.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
