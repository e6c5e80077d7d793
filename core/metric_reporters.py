"""``metric.reporters``: the worker's metrics reporters (Kafka's ``MetricsReporter``).

A reporter is a class named in ``metric.reporters`` (``module.Class`` or ``module:Class``,
installed in the worker's environment), made with no arguments, or an object offered by a
worker extension's ``copycat_metrics_reporters`` hook (:mod:`core.hookspecs`). It may have
any of Kafka's methods, snake_case: ``configure(props)`` (the worker config, strings),
``init(metrics)`` (every metric registered so far), ``metric_change(metric)`` (a metric was
added or replaced), ``metric_removal(metric)`` (a connector's or task's metrics went with it)
and ``close()`` (the worker stops). A :class:`core.metrics.Metric` has ``metric_name`` (group,
name, tags, description) and ``metric_value()``.

A reporter runs on the worker's threads, so it must be quick (hand the work to a thread of
its own). Whatever it raises is logged with its name and never reaches the worker. A class
name that cannot be loaded stops the worker from starting, as in Kafka (a ConfigException
naming the key), except Kafka's own Java reporters (``org.apache.kafka.*``, such as the
JmxReporter of Kafka's default worker configs), which are skipped with a warning: they have
no Python counterpart (``GET /metrics`` serves the same numbers).
"""

from __future__ import annotations

import logging
from typing import Any

from core.extensions import import_class
from core.metrics import Metrics
from core.worker_config import WorkerConfig

__all__ = ["KEY", "add_reporters"]

log = logging.getLogger("copycat.metrics")

KEY = "metric.reporters"
# Namespaces of Java classes: a Kafka worker config's reporters, which no Python module
# provides.
JAVA_PREFIXES = ("org.apache.kafka.", "io.confluent.")


def add_reporters(metrics: Metrics, config: WorkerConfig, extensions: Any = None) -> None:
    """Make the reporters of ``metric.reporters`` and of the extensions' hooks, configure
    them with the worker config and register them with ``metrics``.

    Raises:
        ConfigException: a class in ``metric.reporters`` cannot be loaded (naming it).
    """
    props = config.originals_strings()
    found: list[tuple[str, Any]] = []
    for name in config.get(KEY) or []:
        name = str(name).strip()
        if not name:
            continue
        if name.startswith(JAVA_PREFIXES):
            log.warning(
                "metric.reporters: skipping %s, a Java class with no Python counterpart "
                "(GET /metrics serves the worker's metrics)",
                name,
            )
            continue
        cls = import_class(name, KEY, "metrics reporter")
        try:
            reporter = cls() if isinstance(cls, type) else cls
        except Exception:  # noqa: BLE001 - a reporter never fails the worker
            log.error("metrics reporter %s could not be made; skipped", name, exc_info=True)
            continue
        found.append((name, reporter))
    if extensions is not None:
        for offered in extensions.hook.copycat_metrics_reporters(worker_config=config):
            for reporter in offered or ():
                found.append(
                    (f"{type(reporter).__module__}.{type(reporter).__qualname__}", reporter)
                )
    for name, reporter in found:
        configure = getattr(reporter, "configure", None)
        if callable(configure):
            try:
                configure(dict(props))
            except Exception:  # noqa: BLE001
                log.error("metrics reporter %s failed in configure(); skipped", name, exc_info=True)
                continue
        metrics.add_reporter(name, reporter)
        log.info("metrics reporter %s added", name)
