"""The worker's metrics in Prometheus' text exposition format 0.0.4 (``GET /metrics``).

Names: ``kafka_connect_<group>_<name>``, the group without its ``-metrics`` suffix, every
character that Prometheus does not allow in a name (``-``, ``.``) turned into ``_``: e.g.
``source-task-metrics`` / ``source-record-poll-total`` is
``kafka_connect_source_task_source_record_poll_total``. Tags become labels (``connector``,
``task``), followed by the worker's ``metrics.context.*`` values (``.`` in their names turned
into ``_``). A cumulative metric (Kafka's CumulativeSum / CumulativeCount: the ``*-total``
ones, ``total-record-errors``, ``deadletterqueue-produce-requests`` ...) is a ``counter``,
every other a ``gauge``; names stay Kafka's (no ``_total`` is added).
A metric whose value is text (a status, a class name, the leader's name) is exposed as an
``_info`` gauge of value 1 with the text in a label named after the metric:
``kafka_connect_connector_status_info{connector="c",status="running"} 1``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from core.metrics import Metric, MetricName

__all__ = ["CONTENT_TYPE", "prometheus_name", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "kafka_connect_"
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")


def _name_part(text: str) -> str:
    return _NOT_NAME.sub("_", text)


def prometheus_name(name: MetricName) -> str:
    group = name.group.removesuffix("-metrics")
    return PREFIX + _name_part(group) + "_" + _name_part(name.name)


def _label(text: str) -> str:
    name = _name_part(text)
    return "_" + name if name[:1].isdigit() else name


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def render(metrics: Iterable[Metric], context: Mapping[str, str] | None = None) -> str:
    """The exposition of ``metrics`` (measured now), one family per name, sorted."""
    extra = [(_label(k), str(v)) for k, v in sorted((context or {}).items())]
    families: dict[str, tuple[str, str, list[str]]] = {}
    for metric in metrics:
        name = metric.metric_name
        value = metric.metric_value()
        family = prometheus_name(name)
        labels = [(_label(k), v) for k, v in name.tags]
        if isinstance(value, str):
            family += "_info"
            labels.append((_label(name.name), value))
            number = 1.0
            kind = "gauge"
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            kind = "counter" if metric.cumulative else "gauge"
        labels += [(k, v) for k, v in extra if k not in {n for n, _ in labels}]
        text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
        line = f"{family}{{{text}}} {_number(number)}" if text else f"{family} {_number(number)}"
        help_text = name.description or f"{name.group} {name.name}"
        families.setdefault(family, (help_text, kind, []))[2].append(line)
    out: list[str] = []
    for family in sorted(families):
        help_text, kind, lines = families[family]
        out.append(f"# HELP {family} {_escape_help(help_text)}")
        out.append(f"# TYPE {family} {kind}")
        out.extend(sorted(lines))
    return "\n".join(out) + "\n" if out else ""
