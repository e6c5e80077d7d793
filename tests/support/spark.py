"""A Spark cluster for tests and benchmarks: ``local-cluster[N,C,M]`` with real executor JVMs.

``local-cluster`` starts a standalone Master and N Workers inside the driver's JVM, and each
Worker launches its executor as a JVM process of its own, so executors can be killed with
``kill -9`` and plugin hosts have a real executor JVM as an ancestor. Spark puts the executors'
working directories under ``$SPARK_HOME/work/<application id>`` (pyspark's package directory):
:func:`stop_session` removes the application's directory again.

Everything binds to the loopback interface (``SPARK_LOCAL_IP``, ``spark.driver.host``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "descendants",
    "executor_jvm_of",
    "executor_jvms",
    "process_cwd",
    "remove_work_dirs",
    "start_session",
    "stop_session",
]

EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def start_session(master: str = "local-cluster[2,1,1024]", app: str = "copycat-tests") -> Any:
    """The process's SparkSession on ``master`` (created; one per process)."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        # Executors log what Copycat's executor side logs (INFO) to their stderr files.
        .config("spark.executorEnv.PYTHONUNBUFFERED", "1")
        .getOrCreate()
    )


def stop_session(session: Any) -> None:
    """Stop it and remove its executors' working directories."""
    app = session.sparkContext.applicationId
    session.stop()
    remove_work_dirs([app])


def remove_work_dirs(applications: list[str]) -> None:
    """Remove the executors' working directories of ``local-cluster`` applications (also of
    applications other processes ran: distributed workers, each its own driver)."""
    import pyspark

    home = Path(os.environ.get("SPARK_HOME") or Path(str(pyspark.__file__)).parent)
    for app in applications:
        shutil.rmtree(home / "work" / app, ignore_errors=True)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def ancestors(pid: int) -> list[int]:
    """``pid``'s parent, its parent, ... up to init."""
    out = []
    while pid > 1:
        pid = _ppid(pid)
        if pid:
            out.append(pid)
    return out


def executor_jvm_of(pid: int) -> int | None:
    """The executor JVM ``pid`` descends from, if any."""
    for ancestor in ancestors(pid):
        if EXECUTOR_MAIN in _cmdline(ancestor):
            return ancestor
    return None


def executor_jvms() -> list[int]:
    """Every executor JVM on this machine that is a child of this process's tree."""
    mine = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and EXECUTOR_MAIN in _cmdline(int(entry.name)):
            if mine in ancestors(int(entry.name)):
                found.append(int(entry.name))
    return sorted(found)


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, their children, ...)."""
    return sorted(
        int(e.name)
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and pid in ancestors(int(e.name))
    )


def process_cwd(pid: int) -> Path:
    return Path(os.readlink(f"/proc/{pid}/cwd"))


def processes_under(path: Path) -> list[int]:
    """Live processes whose command line mentions ``path`` (plugin hosts of an env cache)."""
    text = str(path)
    return [
        int(e.name)
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and text in _cmdline(int(e.name))
    ]
