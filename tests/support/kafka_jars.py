"""Apache Kafka's jars (broker and Kafka Connect) for tests and benchmarks, resolved with Maven.

``tests/kafka/pom.xml`` names one Apache Kafka release. :func:`kafka_classpath` runs
``mvn dependency:copy-dependencies`` on it once into a cache directory outside the repository
and returns the directory of jars; later calls (and later runs, and other processes waiting on
the lock meanwhile) find the jars there and start no Maven at all, so a second run downloads
nothing. The cache key includes a hash of the pom: editing the pom resolves afresh.

Where the cache lives: ``$COPYCAT_KAFKA_CACHE`` if set, else ``$XDG_CACHE_HOME/copycat`` or
``~/.cache/copycat``. Deleting it is always safe.

Called from any process (pytest workers, bench scripts); concurrent callers are serialised by
an ``flock`` on a file in the cache, so two xdist workers never run Maven twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["KAFKA_VERSION", "KafkaJarsError", "POM", "java_executable", "kafka_classpath"]

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "tests" / "kafka" / "pom.xml"

# Keep in step with <kafka.version> in tests/kafka/pom.xml (a unit test checks they agree).
KAFKA_VERSION = "4.1.1"

# A cold Maven run on this machine fetches ~55 MB of jars in well under a minute; ten minutes
# allows a slow mirror without letting a hung download block a CI run until its 90 min limit.
MAVEN_TIMEOUT_S = 600

# Lines of Maven output quoted when resolution fails: the error and what led to it.
MAVEN_OUTPUT_TAIL_LINES = 40

_COMPLETE_MARKER = ".complete"


class KafkaJarsError(RuntimeError):
    """Java or Maven is missing, or Maven could not resolve the jars."""


def _cache_root() -> Path:
    explicit = os.environ.get("COPYCAT_KAFKA_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "copycat"


def java_executable() -> str:
    """The ``java`` to run Kafka with: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "java", os.X_OK):
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise KafkaJarsError("Apache Kafka for tests needs Java 17+: no java on PATH or JAVA_HOME")
    return found


def kafka_classpath() -> Path:
    """The directory holding every jar of the pinned Apache Kafka broker and Kafka Connect.

    Runs Maven only when the cache has no complete copy for this pom.

    Raises:
        KafkaJarsError: ``mvn`` is not installed or failed; the message quotes its output.
    """
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    home = _cache_root() / f"kafka-{KAFKA_VERSION}-{digest}"
    lib = home / "lib"
    if (home / _COMPLETE_MARKER).exists():
        return lib
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be resolving right now
        if not (home / _COMPLETE_MARKER).exists():
            _resolve_into(lib)
            (home / _COMPLETE_MARKER).write_text(f"{POM}\n")
    return lib


def _resolve_into(lib: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaJarsError(
            f"resolving Apache Kafka {KAFKA_VERSION} for tests needs Maven (mvn) on PATH"
        )
    # Copy into a fresh directory and rename it into place, so a run killed half way never
    # leaves a partial lib/ that a later run would trust.
    staging = Path(tempfile.mkdtemp(prefix="lib-", dir=lib.parent))
    argv = [
        mvn,
        "--batch-mode",
        "--quiet",
        "--file",
        str(POM),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=MAVEN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise KafkaJarsError(f"mvn did not resolve {POM} within {MAVEN_TIMEOUT_S} s") from exc
    if proc.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-MAVEN_OUTPUT_TAIL_LINES:])
        raise KafkaJarsError(
            f"mvn could not resolve Apache Kafka {KAFKA_VERSION} from {POM}"
            f" (exit {proc.returncode}):\n{tail}"
        )
    shutil.rmtree(lib, ignore_errors=True)
    staging.rename(lib)
