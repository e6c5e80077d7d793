"""A fault-injection plugin (as Kafka's BlockingConnector and friends), built as a real wheel.

``FaultySource`` and ``FaultySink`` behave as their config says:

* ``hang.in``: where to hang forever (only killing the host ends it): ``connector.start``,
  ``connector.stop``, ``connector.validate``, ``connector.task_configs``, ``task.start``,
  ``task.poll``, ``task.put``, ``task.stop``.
* ``hang.if``: a file; ``hang.in`` hangs only while it exists (e.g. on a later call only).
* ``task_configs.wait.while``: a file; while it exists, the connector's task_configs() waits
  (printing ``faulty: waiting in connector.task_configs`` first), then returns as usual: a
  reconfiguration held open until the test removes the file.
* ``connector.start.ms``: how long the connector's start() takes (a slow start that ends).
* ``connector.start.fail``: a message the connector's start() raises as a ConnectException.
* ``connector.start.fail.if``: a file; while it exists, the connector's start() raises a
  ConnectException (a connector that fails on demand, e.g. on its next restart).
* ``connector.start.sigterm.after``: a file; the connector's start() waits until it exists,
  then its plugin host sends itself SIGTERM (as a stop signal to the worker's process group
  reaches a host still being spawned, before it has a session of its own).
* ``connector.validate.ms``: how long validate() takes; it prints
  ``faulty: validating for <ms> ms`` first.
* ``fail.with``: a message the task's poll()/put() raises as a ConnectException.
* ``print.per.poll``: lines the task prints to stdout on each poll()/put().
* ``allocate.mb.per.poll``: MiB the task allocates (and keeps) on each poll()/put().
* ``records.per.poll``: records a source emits per poll() to ``topic`` (default 0).
* ``poll.sleep.ms``: how long a source's poll() sleeps before it returns (default 20).
* ``commit.nothing``: ``true`` makes a sink task's ``pre_commit()`` return no offsets (nothing
  it was given is ever committed).
* ``stdout.on.start``: a line printed when the task starts (e.g. a secret it was given).
* ``stop.marker``: a file each task appends ``stopped <pid>`` to when its stop() runs.
* ``task.stop.ms``: how long a task's stop() takes (a slow stop that ends).
* ``partitions.log``: a file a sink task appends ``open t-p`` / ``close t-p`` to on each
  partition assignment and revocation.
* ``pause.on.open``: ``true`` makes a sink task pause each partition it is given, in
  ``open()`` (``context.pause()``), and never resume it.
* ``put.log``: a file a sink task appends one line per non-empty ``put()`` to: its record
  count.
* ``pre_commit.fail.if``: a file; while it exists, a sink task's ``pre_commit()`` raises a
  ConnectException (a target that cannot make records durable for a while).
* ``commit.log``: a file a source task appends ``commit`` to on each ``commit()`` call.
* ``commit.fail.if``: a file; while it exists, a source task's ``commit()`` raises a
  ConnectException (after logging the call to ``commit.log``).
* ``raise.in``: ``where:how`` pairs, comma-separated: raise in ``where`` (``connector.start``,
  ``connector.validate``, ``connector.exactly_once_support``, ``connector.alter_offsets``,
  ``task.poll``, ``task.put``) an exception whose ``str()`` itself raises (``how`` is
  ``unprintable``) or ``SystemExit(2)`` (``exit``), or print a stack trace and end the plugin
  host with exit code 1 (``crash``).
* ``bad.offset``: the source partition or offset each record of a source's poll carries
  instead of ``{"faulty": "source"}`` / ``{"n": <count>}``: ``int`` (offset ``5``), ``array``
  (``{"n": [1, 2]}``), ``nan`` (``{"n": nan}``), ``datetime`` (``{"ts": <a datetime>}``),
  ``int-key`` (``{1: 1}``) or ``partition-list`` (partition ``[1]``).
* ``bad.offset.after``: how many records are sent with good offsets before ``bad.offset``
  applies (default 0), so a test can see what was committed before it.
* ``wrong.return``: ``where:what`` pairs, comma-separated: return a wrong type from ``where``
  (``task.poll``, ``task.pre_commit``, ``connector.task_configs``): ``str`` (``"wrong"``),
  ``ints`` (``[1, 2, 3]``) or ``strs`` (``["a", "b"]``).

``FaultyTransform`` (an SMT) returns ``{"not": "a record"}`` when ``return`` is ``dict``,
else its record unchanged; with ``retriable.failures`` = n its first n calls raise a
RetriableException (errors.retry.* retries them); while the file named by
``retriable.fail.if`` exists, it prints ``faulty: retriable failure in transform.apply`` and
raises a RetriableException instead (a backend that is down, as a schema registry for the
Avro converter).

Tests install it with :func:`install_faulty` into a plugin path of their own.
"""

from __future__ import annotations

from pathlib import Path

from registry import install
from tests.support.wheels import build_wheel

FAULTY_SOURCE = r"""
import datetime, os, sys, threading, time, traceback
from plugin_api import (ConfigDef, ConfigType, ConnectException, RetriableException,
                        SinkConnector, SinkTask, SourceConnector, SourceRecord, SourceTask,
                        Transformation)

_FOREVER = threading.Event()


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("this exception cannot be printed")


_WRONG = {"str": "wrong", "ints": [1, 2, 3], "strs": ["a", "b"]}


def _pairs(props, key):
    return dict(item.split(":", 1) for item in props.get(key, "").split(",") if item)


def _raise(props, where):
    how = _pairs(props, "raise.in").get(where)
    if how == "unprintable":
        raise Unprintable()
    if how == "exit":
        raise SystemExit(2)
    if how == "crash":
        traceback.print_stack()
        sys.stderr.flush()
        os._exit(1)


def _wrong(props, where):
    # (True, a wrong value) when `where` is to return one, else (False, None)
    what = _pairs(props, "wrong.return").get(where)
    return (what is not None, _WRONG.get(what))


def _hang(props, where):
    if props.get("hang.if") and not os.path.exists(props["hang.if"]):
        return
    if props.get("hang.in") == where:
        print(f"faulty: hanging in {where}", flush=True)
        _FOREVER.wait()


class _Misbehaving:
    def _setup(self, props):
        self.props = dict(props)
        self.hog = []
        if props.get("stdout.on.start"):
            print(props["stdout.on.start"], flush=True)

    def _stopped(self):
        _hang(self.props, "task.stop")
        time.sleep(int(self.props.get("task.stop.ms", "0")) / 1000)
        if self.props.get("stop.marker"):
            with open(self.props["stop.marker"], "a") as marker:
                marker.write(f"stopped {os.getpid()}\n")

    def _misbehave(self, where):
        props = self.props
        _hang(props, where)
        _raise(props, where)
        if props.get("fail.with"):
            raise ConnectException(props["fail.with"])
        for i in range(int(props.get("print.per.poll", "0"))):
            print(f"faulty output line {i}", flush=True)
        mb = int(props.get("allocate.mb.per.poll", "0"))
        if mb:
            self.hog.append(bytearray(mb * 1024 * 1024))


class FaultySourceTask(_Misbehaving, SourceTask):
    def version(self):
        return "1.0"

    def start(self, props):
        self._setup(props)
        _hang(props, "task.start")
        self.sent = 0

    def poll(self):
        self._misbehave("task.poll")
        wrong, value = _wrong(self.props, "task.poll")
        if wrong:
            return value
        time.sleep(int(self.props.get("poll.sleep.ms", "20")) / 1000)
        n = int(self.props.get("records.per.poll", "0"))
        records = [
            SourceRecord(*self._where(self.sent + i + 1), self.props["topic"],
                         value=f"record-{self.sent + i}")
            for i in range(n)
        ]
        self.sent += n
        return records

    def commit(self):
        if self.props.get("commit.log"):
            with open(self.props["commit.log"], "a") as log:
                log.write("commit\n")
        failing = self.props.get("commit.fail.if")
        if failing and os.path.exists(failing):
            raise ConnectException(f"faulty: commit failing while {failing} exists")

    def _where(self, n):
        # (source partition, source offset) of the n-th record
        bad = self.props.get("bad.offset")
        if not bad or n <= int(self.props.get("bad.offset.after", "0")):
            return {"faulty": "source"}, {"n": n}
        if bad == "partition-list":
            return [1], {"n": n}
        offset = {
            "int": 5,
            "array": {"n": [1, 2]},
            "nan": {"n": float("nan")},
            "datetime": {"ts": datetime.datetime(2026, 1, 1)},
            "int-key": {1: 1},
        }[bad]
        return {"faulty": "source"}, offset

    def stop(self):
        self._stopped()


class FaultySinkTask(_Misbehaving, SinkTask):
    def version(self):
        return "1.0"

    def start(self, props):
        self._setup(props)
        _hang(props, "task.start")

    def put(self, records):
        self._misbehave("task.put")
        if records and self.props.get("put.log"):
            with open(self.props["put.log"], "a") as log:
                log.write(f"{len(records)}\n")
        if records and self.props.get("put.values.log"):  # each value as it is put
            with open(self.props["put.values.log"], "a") as log:
                log.writelines(f"{record.value}\n" for record in records)

    def pre_commit(self, offsets):
        if self.props.get("commit.nothing") == "true":
            return {}
        failing = self.props.get("pre_commit.fail.if")
        if failing and os.path.exists(failing):
            raise ConnectException(f"faulty: pre_commit failing while {failing} exists")
        wrong, value = _wrong(self.props, "task.pre_commit")
        return value if wrong else super().pre_commit(offsets)

    def _log_partitions(self, what, partitions):
        if self.props.get("partitions.log"):
            with open(self.props["partitions.log"], "a") as log:
                for tp in partitions:
                    log.write(f"{what} {tp.topic}-{tp.partition}\n")

    def open(self, partitions):
        if self.props.get("pause.on.open") == "true":
            self.context.pause(*partitions)
        self._log_partitions("open", partitions)

    def close(self, partitions):
        self._log_partitions("close", partitions)

    def stop(self):
        self._stopped()


class _FaultyConnector:
    def version(self):
        return "1.0"

    def start(self, props):
        self.props = dict(props)
        _hang(props, "connector.start")
        _raise(props, "connector.start")
        doomed = props.get("connector.start.sigterm.after")
        if doomed:
            while not os.path.exists(doomed):
                time.sleep(0.02)
            os.kill(os.getpid(), 15)
            time.sleep(30)
        time.sleep(int(props.get("connector.start.ms", "0")) / 1000)
        if props.get("connector.start.fail"):
            raise ConnectException(props["connector.start.fail"])
        if props.get("connector.start.fail.if") and os.path.exists(
                props["connector.start.fail.if"]):
            raise ConnectException(f"{props['connector.start.fail.if']} exists")

    def task_configs(self, max_tasks):
        _hang(self.props, "connector.task_configs")
        gate = self.props.get("task_configs.wait.while")
        if gate and os.path.exists(gate):
            print("faulty: waiting in connector.task_configs", flush=True)
            while os.path.exists(gate):
                time.sleep(0.05)
        wrong, value = _wrong(self.props, "connector.task_configs")
        if wrong:
            return value
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self):
        _hang(self.props, "connector.stop")

    def config(self):
        return ConfigDef()

    def validate(self, props):
        _hang(props, "connector.validate")
        _raise(props, "connector.validate")
        slow = int(props.get("connector.validate.ms", "0"))
        if slow:
            print(f"faulty: validating for {slow} ms", flush=True)
            time.sleep(slow / 1000)
        return super().validate(props)

    def exactly_once_support(self, props):
        _raise(props, "connector.exactly_once_support")
        return super().exactly_once_support(props)

    def alter_offsets(self, connector_config, offsets):
        _raise(connector_config, "connector.alter_offsets")
        return super().alter_offsets(connector_config, offsets)


class FaultyTransform(Transformation):
    def configure(self, configs):
        self.returns = configs.get("return")
        self.failures = int(configs.get("retriable.failures") or 0)
        self.retriable_fail_if = configs.get("retriable.fail.if")

    def apply(self, record):
        if self.failures > 0:
            self.failures -= 1
            raise RetriableException(f"faulty: {self.failures} more failures to go")
        failing = self.retriable_fail_if
        if failing and os.path.exists(failing):
            print("faulty: retriable failure in transform.apply", flush=True)
            raise RetriableException("faulty: the transform's backend is unavailable")
        return {"not": "a record"} if self.returns == "dict" else record

    def config(self):
        return (
            ConfigDef()
            .define("return", ConfigType.STRING, None,
                    documentation="what apply() returns: dict, or the record")
            .define("retriable.failures", ConfigType.INT, 0,
                    documentation="how many calls raise a RetriableException first")
            .define("retriable.fail.if", ConfigType.STRING, None,
                    documentation="a file; while it exists, apply() raises RetriableException")
        )


class FaultySource(_FaultyConnector, SourceConnector):
    def task_class(self):
        return FaultySourceTask


class FaultySink(_FaultyConnector, SinkConnector):
    def task_class(self):
        return FaultySinkTask
"""


def install_faulty(plugin_path: Path) -> Path:
    """Build the faulty plugin's wheel and install it into ``plugin_path`` (offline)."""
    wheel = build_wheel(
        plugin_path.parent / "faulty-wheel",
        "faulty-plugin",
        "1.0",
        {"faulty_plugin.py": FAULTY_SOURCE},
        entry_points={
            "copycat.connectors": {
                "FaultySource": "faulty_plugin:FaultySource",
                "FaultySink": "faulty_plugin:FaultySink",
            },
            "copycat.transforms": {"FaultyTransform": "faulty_plugin:FaultyTransform"},
        },
    )
    install(str(wheel), plugin_path, offline=True)
    return plugin_path
