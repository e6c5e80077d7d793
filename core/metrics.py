"""The worker's metrics: a registry modelled on Kafka's ``org.apache.kafka.common.metrics``.

A metric is named by ``(group, name, tags)`` (Kafka's ``MetricName``) and measured on demand:
a cumulative total, a windowed rate, average or maximum, or a gauge (any callable). Windowed
stats keep ``metrics.num.samples`` samples of ``metrics.sample.window.ms`` each, as Kafka's
``SampledStat``: a sample older than all of them together is forgotten, so an average or a
maximum describes the last ``samples x window`` (by default 2 x 30 s), and a rate divides the
samples' sum by their span (at least ``samples - 1`` full windows, as Kafka's ``Rate``).

A :class:`Sensor` is where numbers are recorded (one lock, a few additions per record call);
the metrics made from it only read it. Callers record per batch, never per record: the data
path hands its counts over in bulk (:meth:`Sensor.record_many`).

Metrics live in groups (:class:`MetricGroup`, Kafka's ``ConnectMetrics.MetricGroup``): a
connector's or a task's group is closed when it stops, which removes its metrics (and tells
the reporters, :mod:`core.metric_reporters`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "DEFAULT_NUM_SAMPLES",
    "DEFAULT_SAMPLE_WINDOW_MS",
    "Metric",
    "MetricGroup",
    "MetricName",
    "Metrics",
    "MetricsReporter",
    "Sensor",
]

log = logging.getLogger("copycat.metrics")

DEFAULT_SAMPLE_WINDOW_MS = 30_000
DEFAULT_NUM_SAMPLES = 2

MetricValue = float | str


@dataclass(frozen=True)
class MetricName:
    """Kafka's ``MetricName``: equal when group, name and tags are (not the description)."""

    name: str
    group: str
    tags: tuple[tuple[str, str], ...] = ()
    description: str = field(default="", compare=False)

    @property
    def tag_dict(self) -> dict[str, str]:
        return dict(self.tags)


class Metric:
    """One registered metric (Kafka's ``KafkaMetric``): its name and how to measure it."""

    __slots__ = ("metric_name", "_measure", "_clock", "cumulative")

    def __init__(
        self,
        metric_name: MetricName,
        measure: Callable[[float], MetricValue],
        clock: Callable[[], float],
        cumulative: bool = False,
    ) -> None:
        self.metric_name = metric_name
        self._measure = measure
        self._clock = clock
        # A count that only grows (Kafka's CumulativeSum / CumulativeCount): a Prometheus
        # counter, every other metric a gauge.
        self.cumulative = cumulative

    def metric_value(self) -> MetricValue:
        """The current value (Kafka's ``metricValue()``); NaN when the gauge failed."""
        try:
            return self._measure(self._clock())
        except Exception:  # noqa: BLE001 - a broken gauge must not break a scrape
            return math.nan

    def __repr__(self) -> str:
        return f"Metric({self.metric_name.group}/{self.metric_name.name} {self.metric_name.tags})"


class MetricsReporter(Protocol):
    """Kafka's ``MetricsReporter``, snake_case (``metric.reporters``)."""

    def configure(self, configs: Mapping[str, str]) -> None: ...

    def init(self, metrics: list[Metric]) -> None: ...

    def metric_change(self, metric: Metric) -> None: ...

    def metric_removal(self, metric: Metric) -> None: ...

    def close(self) -> None: ...


class Sensor:
    """Numbers recorded together: a cumulative count and sum, and windowed samples of count,
    sum and maximum. Thread-safe; recording is a handful of additions under a lock."""

    __slots__ = ("_lock", "_window_ms", "_num", "_clock", "total", "count", "_samples", "_cur")

    def __init__(self, window_ms: float, num_samples: int, clock: Callable[[], float]) -> None:
        self._lock = threading.Lock()
        self._window_ms = float(window_ms)
        self._num = max(1, int(num_samples))
        self._clock = clock
        self.total = 0.0  # cumulative sum of every value recorded
        self.count = 0  # cumulative number of values recorded
        # Samples: [start ms, count, sum, max]; the last one is current.
        self._samples: list[list[float]] = []
        self._cur: list[float] | None = None

    def record(self, value: float = 1.0, now_ms: float | None = None) -> None:
        """One value (an event of ``value``)."""
        self.record_many(1, value, value, now_ms)

    def record_many(
        self,
        count: int,
        total: float,
        maximum: float,
        now_ms: float | None = None,
        *,
        minimum: float | None = None,
    ) -> None:
        """``count`` values summing to ``total``, the largest ``maximum`` (the smallest
        ``minimum``: that of a single value when not told), recorded at once (a batch's counts
        handed over by the data path). Nothing is recorded for 0 values."""
        if minimum is None:
            minimum = maximum if count == 1 else math.inf
        if count <= 0:
            return
        now = self._clock() if now_ms is None else now_ms
        with self._lock:
            self.total += total
            self.count += count
            cur = self._cur
            if cur is None or now - cur[0] >= self._window_ms:
                cur = [now, 0.0, 0.0, -math.inf, math.inf]
                self._samples.append(cur)
                if len(self._samples) > self._num:
                    del self._samples[0]
                self._cur = cur
            cur[1] += count
            cur[2] += total
            if maximum > cur[3]:
                cur[3] = maximum
            if minimum < cur[4]:
                cur[4] = minimum

    def _live(self, now: float) -> list[list[float]]:
        """Samples not older than ``samples x window`` (Kafka's purge of obsolete samples)."""
        expire = self._window_ms * self._num
        return [s for s in self._samples if now - s[0] < expire]

    def windowed_sum(self, now: float) -> float:
        with self._lock:
            return sum(s[2] for s in self._live(now))

    def windowed_count(self, now: float) -> float:
        with self._lock:
            return sum(s[1] for s in self._live(now))

    def rate(self, now: float) -> float:
        """Per second over the live samples' span, at least ``samples - 1`` full windows
        (Kafka's ``Rate.windowSize``), so a burst just after a quiet spell is not inflated."""
        with self._lock:
            live = self._live(now)
            if not live:
                return 0.0
            total = sum(s[2] for s in live)
            elapsed = now - min(s[0] for s in live)
        full = int(elapsed // self._window_ms)
        minimum = self._num - 1
        if full < minimum:
            elapsed += (minimum - full) * self._window_ms
        if elapsed <= 0:
            return 0.0
        return total / (elapsed / 1000.0)

    def avg(self, now: float) -> float:
        """Mean of the values in the live samples; NaN without any (Kafka's ``Avg``)."""
        with self._lock:
            live = self._live(now)
            count = sum(s[1] for s in live)
            return sum(s[2] for s in live) / count if count else math.nan

    def max(self, now: float) -> float:
        """Largest value in the live samples; NaN without any (Kafka's ``Max``)."""
        with self._lock:
            live = self._live(now)
            return max(s[3] for s in live) if live else math.nan

    def min(self, now: float) -> float:
        """Smallest value in the live samples; NaN without any (Kafka's ``Min``); NaN too
        when only counts recorded together without their minimum were seen."""
        with self._lock:
            live = self._live(now)
            smallest = min((s[4] for s in live), default=math.inf)
            return smallest if smallest != math.inf else math.nan


class MetricGroup:
    """Metrics sharing a group name and tags (a connector's, a task's); :meth:`close` removes
    them all."""

    def __init__(self, registry: Metrics, group: str, tags: tuple[tuple[str, str], ...]) -> None:
        self.registry = registry
        self.group = group
        self.tags = tags
        self._metrics: list[Metric] = []
        self._lock = threading.Lock()
        self.closed = False

    def metric_name(self, name: str, description: str = "") -> MetricName:
        return MetricName(name, self.group, self.tags, description)

    def sensor(self) -> Sensor:
        return self.registry.sensor()

    def add(
        self,
        name: str,
        description: str,
        measure: Callable[[float], MetricValue],
        *,
        cumulative: bool = False,
    ) -> None:
        """A metric measured by ``measure(now_ms)``; ``cumulative``: a count that only grows."""
        metric_name = self.metric_name(name, description)
        with self._lock:
            if self.closed:
                return
            self._metrics.append(self.registry.add(metric_name, measure, cumulative=cumulative))

    def gauge(self, name: str, description: str, value: Callable[[], MetricValue]) -> None:
        self.add(name, description, lambda now: value())

    def counter(self, name: str, description: str, value: Callable[[], float]) -> None:
        """A cumulative count read from ``value()`` (kept elsewhere, e.g. a task's loop)."""
        self.add(name, description, lambda now: value(), cumulative=True)

    def total(self, name: str, description: str, sensor: Sensor) -> None:
        self.add(name, description, lambda now: sensor.total, cumulative=True)

    def rate(self, name: str, description: str, sensor: Sensor) -> None:
        self.add(name, description, sensor.rate)

    def avg(self, name: str, description: str, sensor: Sensor) -> None:
        self.add(name, description, sensor.avg)

    def max(self, name: str, description: str, sensor: Sensor) -> None:
        self.add(name, description, sensor.max)

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            metrics, self._metrics = self._metrics, []
        for metric in metrics:
            self.registry.remove(metric)


class Metrics:
    """The worker's registry (Kafka's ``Metrics``): its metrics, groups and reporters."""

    def __init__(
        self,
        *,
        sample_window_ms: float = DEFAULT_SAMPLE_WINDOW_MS,
        num_samples: int = DEFAULT_NUM_SAMPLES,
        clock: Callable[[], float] | None = None,
        context: Mapping[str, str] | None = None,
    ) -> None:
        self.sample_window_ms = sample_window_ms
        self.num_samples = num_samples
        self.clock: Callable[[], float] = clock or (lambda: time.monotonic() * 1000.0)
        # metrics.context.* (Kafka's MetricsContext), e.g. connect.kafka.cluster.id.
        self.context: dict[str, str] = dict(context or {})
        self._lock = threading.RLock()
        self._metrics: dict[MetricName, Metric] = {}
        self._groups: dict[tuple[str, tuple[tuple[str, str], ...]], MetricGroup] = {}
        self._reporters: list[tuple[str, Any]] = []

    # -- recording ---------------------------------------------------------------------------

    def sensor(self) -> Sensor:
        return Sensor(self.sample_window_ms, self.num_samples, self.clock)

    def group(self, group: str, **tags: str) -> MetricGroup:
        """A new group of ``group`` with ``tags`` (in the given order); an open group of the
        same name and tags is closed first (a restarted task's metrics start afresh)."""
        key = (group, tuple(tags.items()))
        with self._lock:
            old = self._groups.pop(key, None)
        if old is not None:
            old.close()
        made = MetricGroup(self, group, key[1])
        with self._lock:
            self._groups[key] = made
        return made

    def close_group(self, group: MetricGroup) -> None:
        """Close ``group`` and forget it, unless another has replaced it since."""
        with self._lock:
            key = (group.group, group.tags)
            if self._groups.get(key) is group:
                del self._groups[key]
        group.close()

    def add(
        self,
        name: MetricName,
        measure: Callable[[float], MetricValue],
        *,
        cumulative: bool = False,
    ) -> Metric:
        metric = Metric(name, measure, self.clock, cumulative)
        with self._lock:
            self._metrics[name] = metric
            reporters = list(self._reporters)
        for reporter_name, reporter in reporters:
            _tell(reporter_name, reporter, "metric_change", metric)
        return metric

    def remove(self, metric: Metric) -> None:
        """Remove ``metric``, unless a newer metric of its name has replaced it."""
        with self._lock:
            if self._metrics.get(metric.metric_name) is not metric:
                return
            del self._metrics[metric.metric_name]
            reporters = list(self._reporters)
        for reporter_name, reporter in reporters:
            _tell(reporter_name, reporter, "metric_removal", metric)

    # -- reading -----------------------------------------------------------------------------

    def metrics(self) -> list[Metric]:
        with self._lock:
            return list(self._metrics.values())

    def metric(self, group: str, name: str, **tags: str) -> Metric | None:
        """The metric of that group, name and tags (tags in any order), or None."""
        wanted = sorted(tags.items())
        with self._lock:
            for metric_name, metric in self._metrics.items():
                if (
                    metric_name.group == group
                    and metric_name.name == name
                    and sorted(metric_name.tags) == wanted
                ):
                    return metric
        return None

    def value(self, group: str, name: str, **tags: str) -> MetricValue | None:
        metric = self.metric(group, name, **tags)
        return None if metric is None else metric.metric_value()

    # -- reporters ---------------------------------------------------------------------------

    def add_reporter(self, name: str, reporter: Any) -> None:
        """Register a reporter: ``init`` with every metric now, then every change and removal.
        A reporter's failures are logged, never raised (:func:`_tell`)."""
        with self._lock:
            self._reporters.append((name, reporter))
            current = list(self._metrics.values())
        _tell(name, reporter, "init", current)

    def close(self) -> None:
        """Close every group and the reporters (the worker's stop)."""
        with self._lock:
            groups = list(self._groups.values())
            self._groups.clear()
        for group in groups:
            group.close()
        with self._lock:
            reporters, self._reporters = self._reporters, []
        for name, reporter in reporters:
            _tell(name, reporter, "close")


# (reporter id, method) whose failure was logged with its trace; later ones go to DEBUG, so a
# reporter failing on each of a task's metrics does not flood the log.
_logged_failures: set[tuple[int, str]] = set()


def _tell(name: str, reporter: Any, method: str, *args: Any) -> None:
    """Call a reporter; its failure is logged with its name, never raised."""
    fn = getattr(reporter, method, None)
    if not callable(fn):
        return
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - a reporter must never fail the worker
        key = (id(reporter), method)
        if key in _logged_failures:
            log.debug("metrics reporter %s failed in %s(): %s", name, method, exc)
            return
        _logged_failures.add(key)
        log.warning(
            "metrics reporter %s failed in %s() (its later failures there are logged at DEBUG): %s",
            name,
            method,
            exc,
            exc_info=True,
        )
