"""Connector configuration: Kafka Connect's connector keys, their validation and typed view.

Three tables mirror Kafka's ``ConnectorConfig``, ``SourceConnectorConfig`` and
``SinkConnectorConfig``: :data:`CONNECTOR_CONFIG_DEF` (keys every connector has),
:data:`SOURCE_CONNECTOR_CONFIG_DEF` and :data:`SINK_CONNECTOR_CONFIG_DEF`. Like Kafka,
:func:`connector_config_def` *enriches* a table for one submitted configuration with the
per-alias keys (``transforms.<alias>.type``, ``predicates.<alias>.type``,
``topic.creation.<group>.*``) so that a missing ``type`` is reported on its own key.

:func:`validate_connector_config` adds the rules that span several keys (sink topics,
the dead letter queue topic, predicate references) and is what the REST
``config/validate`` endpoint reports; :class:`ConnectorConfig` is the frozen, typed
object the worker hands around.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from plugin_api.config import (
    NO_DEFAULT,
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Range,
    ValidString,
    Width,
    config_infos,
    parse_type,
)
from plugin_api.errors import ConfigException

from core.topic_names import JavaRegexError, compile_topics_regex, topic_name_error

__all__ = [
    "CONNECTOR_CONFIG_DEF",
    "SINK_CONNECTOR_CONFIG_DEF",
    "SOURCE_CONNECTOR_CONFIG_DEF",
    "ConnectorConfig",
    "PredicateSpec",
    "TransformSpec",
    "alias_list",
    "connector_config_def",
    "connector_config_infos",
    "validate_connector_config",
]

_T = ConfigType
_HIGH, _MEDIUM, _LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW

COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"
TOPIC_CREATION_GROUP = "Topic Creation"
EXACTLY_ONCE_GROUP = "Exactly Once Support"
OFFSETS_TOPIC_GROUP = "offsets.topic"

CONVERTER_KEYS = ("key.converter", "value.converter", "header.converter")
_TRANSFORM_RESERVED = ("type", "predicate", "negate")
# Values of task.runtime (worker and connector): a thread of this worker, or a Spark executor.
TASK_RUNTIMES = ("local", "spark")
_TOPIC_CREATION_PREFIX = "topic.creation."
_DEFAULT_TOPIC_CREATION_GROUP = "default"

# Kafka waits at most this long between two retries of a failed operation (jitter is
# added); long enough not to hammer a system that is down, short enough to notice recovery.
_MAX_RETRY_DELAY_MS = 60_000
# Dead letter queue topics are created with Kafka's production default replication.
_DLQ_REPLICATION_FACTOR = 3

_MUTUALLY_EXCLUSIVE = "topics and topics.regex are mutually exclusive options, but both are set."
_NEED_TOPICS = "Must configure one of topics or topics.regex"


def _nullable(check: Callable[[str, Any], None]) -> Callable[[str, Any], None]:
    def validate(name: str, value: Any) -> None:
        if value is not None:
            check(name, value)

    return validate


def _connector_name(name: str, value: Any) -> None:
    if value is None:  # missing: "Missing required configuration" says it (as in Kafka)
        return
    if value == "":
        raise ConfigException(name, value, "String may not be empty")
    # Java's Character.isISOControl; Kafka lists each one's code in decimal, repeats included
    control = [c for c in value if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]
    if control:
        codes = ", ".join(str(ord(c)) for c in control)
        raise ConfigException(
            name,
            value,
            f"String may not contain control sequences but had the following ASCII chars: {codes}",
        )


def _unique_aliases(name: str, value: Any) -> None:
    if value is None:  # a JSON null in a submitted config (a missing key is the empty list)
        raise ConfigException(name, None, "entry must be non null")
    # An empty alias is no error of its own, as in Kafka: its "transforms..type" is missing.
    if len(set(value)) != len(value):
        raise ConfigException(name, value, "Duplicate alias provided.")


def _regex(name: str, value: Any) -> None:
    """A topic creation group's include/exclude entry: Java's syntax, matched against whole
    topic names as Kafka's ``TopicCreationGroup`` does (:mod:`core.topic_names`)."""
    if not value:
        return
    try:
        compile_topics_regex(value)
    except JavaRegexError as exc:
        raise ConfigException(name, value, f"Syntax error in regular expression: {exc}") from None


def _topics_regex(name: str, value: Any) -> None:
    """Java's syntax, matched as the sink's consumer matches it (:mod:`core.topic_names`)."""
    if not value:
        return
    try:
        compile_topics_regex(value)
    except JavaRegexError as exc:
        raise ConfigException(name, value, f"Invalid regex: {exc}") from None


def _topic_names(name: str, value: Any) -> None:
    """Kafka's ``Topic.validate`` on each entry. Kafka Connect accepts an illegal name at
    create and its task then fails (``InvalidTopicException: Invalid topics: [...]``); refusing
    it here says which name at once (a deviation, see docs/rest.md)."""
    for topic in value or ():
        if topic and (error := topic_name_error(topic)):
            raise ConfigException(name, ",".join(value), error)


def _regex_list(name: str, value: Any) -> None:
    for pattern in value or ():
        _regex(name, pattern)


def _replication_factor(name: str, value: Any) -> None:
    if value is not None and value != -1 and value < 1:
        raise ConfigException(
            name,
            value,
            "Replication factor must be positive and not larger than the number of brokers in "
            "the Kafka cluster, or -1 to use the broker's default",
        )


def _partitions(name: str, value: Any) -> None:
    if value is not None and value != -1 and value < 1:
        raise ConfigException(
            name, value, "Number of partitions must be positive, or -1 to use the broker's default"
        )


class _Orders:
    """Hands out ``order_in_group`` numbers, counting per group like Kafka's tables."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def __call__(self, group: str) -> int:
        self._next[group] = self._next.get(group, 0) + 1
        return self._next[group]


def _nullable_runtime(name: str, value: object) -> None:
    if value is not None and str(value).lower() not in TASK_RUNTIMES:
        raise ConfigException(
            name, value, f"String must be one of: {', '.join(TASK_RUNTIMES)} (or unset)"
        )


def _nullable_at_least_zero(name: str, value: object) -> None:
    if value is not None:
        Range.at_least(0)(name, value)


def _common(d: ConfigDef, order: _Orders) -> ConfigDef:
    c, t, p, e = COMMON_GROUP, TRANSFORMS_GROUP, PREDICATES_GROUP, ERROR_GROUP
    d.define(
        "name",
        _T.STRING,
        NO_DEFAULT,
        _connector_name,
        _HIGH,
        "Globally unique name of the connector.",
        c,
        order(c),
        Width.MEDIUM,
        "Connector name",
    )
    d.define(
        "connector.class",
        _T.STRING,
        NO_DEFAULT,
        None,
        _HIGH,
        "Connector class name or alias (simple name, optionally without 'Connector').",
        c,
        order(c),
        Width.LONG,
        "Connector class",
    )
    d.define(
        "tasks.max",
        _T.INT,
        1,
        Range.at_least(1),
        _HIGH,
        "Maximum number of tasks for this connector.",
        c,
        order(c),
        Width.SHORT,
        "Tasks max",
    )
    d.define(
        "tasks.max.enforce",
        _T.BOOLEAN,
        True,
        None,
        _LOW,
        "(Deprecated) Fail a connector that generates more than tasks.max tasks.",
        c,
        order(c),
        Width.SHORT,
        "Enforce tasks max",
    )
    d.define(
        "connector.plugin.version",
        _T.STRING,
        None,
        None,
        _MEDIUM,
        "Version (or range) of the connector plugin to use (KIP-891); unset = latest.",
        c,
        order(c),
        Width.MEDIUM,
        "Connector plugin version",
    )
    for key, side in zip(CONVERTER_KEYS, ("keys", "values", "headers"), strict=True):
        d.define(
            key,
            _T.CLASS,
            None,
            None,
            _LOW,
            f"Converter for record {side}; overrides the worker's.",
            c,
            order(c),
            Width.SHORT,
            key.replace(".", " ").capitalize() + " class",
        )
    # Kafka's ConnectorConfig order (its create refusal lists errors in it): the aliases
    # right after the converters.
    d.define(
        "transforms",
        _T.LIST,
        "",
        _unique_aliases,
        _LOW,
        "Aliases of the transformations applied to records, in order.",
        t,
        order(t),
        Width.LONG,
        "Transforms",
    )
    d.define(
        "predicates",
        _T.LIST,
        "",
        _unique_aliases,
        _LOW,
        "Aliases of the predicates used by transformations.",
        p,
        order(p),
        Width.LONG,
        "Predicates",
    )
    d.define(
        "config.action.reload",
        _T.STRING,
        "restart",
        ValidString.in_("none", "restart"),  # case-sensitive, as Kafka's
        _LOW,
        "What to do when a config provider reports changed values.",
        c,
        order(c),
        Width.MEDIUM,
        "Reload action",
    )
    d.define(
        "task.runtime",
        _T.STRING,
        None,
        _nullable_runtime,
        _LOW,
        "Where this connector's tasks run: local or spark (docs/spark.md); unset = the "
        "worker's task.runtime.",
        c,
        order(c),
        Width.SHORT,
        "Task runtime",
    )
    d.define(
        "task.restart.policy",
        _T.STRING,
        "none",
        CaseInsensitiveValidString.in_("none", "on-failure"),
        _LOW,
        "Restart failed tasks automatically: none (Kafka's behaviour) or on-failure, after a "
        "backoff that doubles from task.restart.backoff.initial.ms up to "
        "task.restart.backoff.max.ms, at most task.restart.max.attempts times in a row.",
        c,
        order(c),
        Width.SHORT,
        "Task restart policy",
    )
    d.define(
        "task.restart.max.attempts",
        _T.INT,
        5,
        Range.at_least(1),
        _LOW,
        "Automatic restarts of a task in a row before it stays FAILED.",
        c,
        order(c),
        Width.SHORT,
        "Task restart attempts",
    )
    d.define(
        "task.restart.backoff.initial.ms",
        _T.LONG,
        1_000,
        Range.at_least(0),
        _LOW,
        "Delay before the first automatic restart of a failed task.",
        c,
        order(c),
        Width.SHORT,
        "Task restart initial backoff",
    )
    d.define(
        "task.restart.backoff.max.ms",
        _T.LONG,
        60_000,
        Range.at_least(0),
        _LOW,
        "Longest delay between automatic restarts; a task that ran longer than this before "
        "failing starts counting its attempts again.",
        c,
        order(c),
        Width.SHORT,
        "Task restart max backoff",
    )
    d.define(
        "plugin.host.memory.max.bytes",
        _T.LONG,
        None,
        _nullable_at_least_zero,
        _LOW,
        "Address-space limit of this connector's plugin hosts (its own and its tasks'); "
        "unset = the worker's plugin.host.memory.max.bytes, 0 = none.",
        c,
        order(c),
        Width.SHORT,
        "Plugin host memory limit",
    )
    d.define(
        "errors.retry.timeout",
        _T.LONG,
        0,
        None,  # as Kafka: any negative value retries forever
        _MEDIUM,
        "Total ms to retry a failed operation; 0 = no retries, -1 = forever.",
        e,
        order(e),
        Width.MEDIUM,
        "Retry timeout for errors",
    )
    d.define(
        "errors.retry.delay.max.ms",
        _T.LONG,
        _MAX_RETRY_DELAY_MS,
        None,  # as Kafka; 0 or less: a retriable failure is not retried
        _MEDIUM,
        "Maximum delay between consecutive retries.",
        e,
        order(e),
        Width.MEDIUM,
        "Maximum delay between retries for errors",
    )
    d.define(
        "errors.tolerance",
        _T.STRING,
        "none",
        ValidString.in_("none", "all"),  # case-sensitive, as Kafka's
        _MEDIUM,
        "none: a record error fails the task; all: skip bad records.",
        e,
        order(e),
        Width.SHORT,
        "Error tolerance",
    )
    d.define(
        "errors.log.enable",
        _T.BOOLEAN,
        False,
        None,
        _MEDIUM,
        "Log every error, failed operation and problem record.",
        e,
        order(e),
        Width.SHORT,
        "Log Errors",
    )
    d.define(
        "errors.log.include.messages",
        _T.BOOLEAN,
        False,
        None,
        _MEDIUM,
        "Include details of the failed record in the error log.",
        e,
        order(e),
        Width.SHORT,
        "Log Error Details",
    )
    return d


def _build_common() -> ConfigDef:
    return _common(ConfigDef(), _Orders())


def _build_source() -> ConfigDef:
    order = _Orders()
    d = _common(ConfigDef(), order)
    tc, eo, ot = TOPIC_CREATION_GROUP, EXACTLY_ONCE_GROUP, OFFSETS_TOPIC_GROUP
    d.define(
        "topic.creation.groups",
        _T.LIST,
        "",
        _unique_aliases,
        _LOW,
        "Groups of topic.creation.<group>.* settings; 'default' always exists.",
        tc,
        order(tc),
        Width.LONG,
        "Topic Creation Groups",
    )
    d.define(
        "exactly.once.support",
        _T.STRING,
        "requested",
        CaseInsensitiveValidString.in_("requested", "required"),
        _MEDIUM,
        "'required' fails validation unless the connector guarantees exactly-once.",
        eo,
        order(eo),
        Width.SHORT,
        "Exactly once support",
    )
    d.define(
        "transaction.boundary",
        _T.STRING,
        "poll",
        CaseInsensitiveValidString.in_("poll", "interval", "connector"),
        _MEDIUM,
        "Where transactions end: per poll(), per interval, or as the connector says.",
        eo,
        order(eo),
        Width.SHORT,
        "Transaction Boundary",
    )
    d.define(
        "transaction.boundary.interval.ms",
        _T.LONG,
        None,
        _nullable(Range.at_least(0)),
        _LOW,
        "Transaction length for transaction.boundary=interval; unset = offset.flush.interval.ms.",
        eo,
        order(eo),
        Width.SHORT,
        "Transaction boundary interval",
    )
    d.define(
        "offsets.storage.topic",
        _T.STRING,
        None,
        NonEmptyString(),
        _LOW,
        "This connector's own offsets topic (distributed mode).",
        ot,
        order(ot),
        Width.LONG,
        "Offsets topic",
    )
    return d


def _build_sink() -> ConfigDef:
    order = _Orders()
    d = _common(ConfigDef(), order)
    c, e = COMMON_GROUP, ERROR_GROUP
    d.define(
        "topics",
        _T.LIST,
        "",
        _topic_names,
        _HIGH,
        "Topics to consume; set this or topics.regex.",
        c,
        order(c),
        Width.LONG,
        "Topics",
    )
    d.define(
        "topics.regex",
        _T.STRING,
        "",
        _topics_regex,
        _HIGH,
        "Regex of the topics to consume; set this or topics.",
        c,
        order(c),
        Width.LONG,
        "Topics regex",
    )
    d.define(
        "errors.deadletterqueue.topic.name",
        _T.STRING,
        "",
        None,
        _MEDIUM,
        "Topic receiving records that failed; empty = no dead letter queue.",
        e,
        order(e),
        Width.MEDIUM,
        "Dead Letter Queue Topic Name",
    )
    d.define(
        "errors.deadletterqueue.topic.replication.factor",
        _T.SHORT,
        _DLQ_REPLICATION_FACTOR,
        None,  # as Kafka: a value the broker refuses fails the task at its start
        _MEDIUM,
        "Replication factor of a created dead letter queue topic.",
        e,
        order(e),
        Width.MEDIUM,
        "Dead Letter Queue Topic Replication Factor",
    )
    d.define(
        "errors.deadletterqueue.context.headers.enable",
        _T.BOOLEAN,
        False,
        None,
        _MEDIUM,
        "Add __connect.errors.* headers describing the failure to dead-lettered records.",
        e,
        order(e),
        Width.MEDIUM,
        "Enable Error Context Headers",
    )
    return d


CONNECTOR_CONFIG_DEF: ConfigDef = _build_common()
"""Keys of every connector (Kafka's ``ConnectorConfig``)."""
SOURCE_CONNECTOR_CONFIG_DEF: ConfigDef = _build_source()
"""Keys of source connectors (Kafka's ``SourceConnectorConfig``)."""
SINK_CONNECTOR_CONFIG_DEF: ConfigDef = _build_sink()
"""Keys of sink connectors (Kafka's ``SinkConnectorConfig``)."""


def _aliases(props: Mapping[str, object], key: str) -> list[str]:
    """Distinct aliases listed under ``key``, in order; garbage yields none (reported
    elsewhere). An empty entry (``a,``, ``,,a``) is an alias too, as Kafka's list parsing
    keeps it: ``transforms..type`` is then its missing class."""
    raw = props.get(key)
    if isinstance(raw, str):
        items = alias_list(raw)
    elif isinstance(raw, (list, tuple)):
        items = [str(a).strip() for a in raw]
    else:
        return []
    return list(dict.fromkeys(items))


def alias_list(raw: str) -> list[str]:
    """A ``transforms``/``predicates`` value split as Kafka's ConfigDef splits a LIST: none
    for a blank value, else every entry between commas, empty ones included."""
    aliases: list[str] = parse_type("transforms", raw, ConfigType.LIST)
    return aliases


def _uses_topic_creation(props: Mapping[str, object]) -> bool:
    """Kafka's ``SourceConnectorConfig.usesTopicCreation``: any ``topic.creation.*`` key,
    ``topic.creation.groups`` included (the default group's settings are then required)."""
    return any(k.startswith(_TOPIC_CREATION_PREFIX) for k in props)


def connector_config_def(
    props: Mapping[str, object], is_sink: bool | None, *, topic_creation_enabled: bool = True
) -> ConfigDef:
    """The table for ``props``, enriched with its per-alias keys.

    Args:
        props: The submitted connector configuration.
        is_sink: ``True`` for a sink, ``False`` for a source, ``None`` if not known yet
            (common keys only).
        topic_creation_enabled: The worker's ``topic.creation.enable``; when off,
            ``topic.creation.*`` keys are not checked (as in Kafka).
    """
    base = {
        None: CONNECTOR_CONFIG_DEF,
        True: SINK_CONNECTOR_CONFIG_DEF,
        False: SOURCE_CONNECTOR_CONFIG_DEF,
    }[is_sink]
    d = ConfigDef(base.keys.values())
    for alias in _aliases(props, "transforms"):
        group, prefix = f"Transforms: {alias}", f"transforms.{alias}."
        d.define(
            prefix + "type",
            _T.CLASS,
            NO_DEFAULT,
            None,
            _HIGH,
            "Class (or alias) of the transformation.",
            group,
            0,
            Width.LONG,
            "Transformation type",
        )
        d.define(
            prefix + "predicate",
            _T.STRING,
            None,
            None,
            _MEDIUM,
            "Alias of the predicate deciding whether the transformation applies.",
            group,
            1,
            Width.LONG,
            "Predicate",
        )
        d.define(
            prefix + "negate",
            _T.BOOLEAN,
            False,
            None,
            _MEDIUM,
            "Apply the transformation when the predicate does not match.",
            group,
            2,
            Width.SHORT,
            "Negate",
        )
    for alias in _aliases(props, "predicates"):
        d.define(
            f"predicates.{alias}.type",
            _T.CLASS,
            NO_DEFAULT,
            None,
            _HIGH,
            "Class (or alias) of the predicate.",
            f"Predicates: {alias}",
            0,
            Width.LONG,
            "Predicate type",
        )
    if is_sink is False and topic_creation_enabled and _uses_topic_creation(props):
        groups = [_DEFAULT_TOPIC_CREATION_GROUP] + [
            g
            for g in _aliases(props, "topic.creation.groups")
            if g != _DEFAULT_TOPIC_CREATION_GROUP
        ]
        for alias in groups:
            is_default = alias == _DEFAULT_TOPIC_CREATION_GROUP
            group, prefix = f"{TOPIC_CREATION_GROUP}: {alias}", f"{_TOPIC_CREATION_PREFIX}{alias}."
            d.define(
                prefix + "include",
                _T.LIST,
                ".*" if is_default else "",
                # Kafka drops the default group's include and exclude unread.
                None if is_default else _regex_list,
                _LOW,
                "Regexes of the topics this group applies to.",
                group,
                1,
                Width.LONG,
                "Include",
            )
            d.define(
                prefix + "exclude",
                _T.LIST,
                "",
                None if is_default else _regex_list,
                _LOW,
                "Regexes of topics excluded from this group (wins over include).",
                group,
                2,
                Width.LONG,
                "Exclude",
            )
            d.define(
                prefix + "replication.factor",
                _T.SHORT,
                NO_DEFAULT if is_default else None,
                _replication_factor,
                _LOW,
                "Replication factor of created topics; -1 = broker default.",
                group,
                3,
                Width.SHORT,
                "Replication factor",
            )
            d.define(
                prefix + "partitions",
                _T.INT,
                NO_DEFAULT if is_default else None,
                _partitions,
                _LOW,
                "Partitions of created topics; -1 = broker default.",
                group,
                4,
                Width.SHORT,
                "Partitions",
            )
    return d


def _cross_key_errors(
    values: Mapping[str, ConfigValue], is_sink: bool | None, props: Mapping[str, object]
) -> None:
    """Add the errors that involve several keys to ``values`` (in place)."""
    predicates = values["predicates"].value or []
    # A duplicated alias is one transform (Kafka enriches a set of them): its errors once.
    for alias in dict.fromkeys(values["transforms"].value or []):
        # Kafka's ConnectorConfig.enrich: the type's validator refuses a negate key (any
        # value) without a predicate key.
        negate, predicate = f"transforms.{alias}.negate", f"transforms.{alias}.predicate"
        type_cv = values.get(f"transforms.{alias}.type")
        if type_cv is not None and negate in props and predicate not in props:
            type_cv.add_error_message(
                f"Config '{negate}' was provided but there is no config '{predicate}' "
                "defining a predicate to be negated."
            )
        result = values.get(f"transforms.{alias}.predicate")
        if result is not None and result.value and result.value not in predicates:
            result.add_error_message(
                f"Invalid value {result.value} for configuration {result.name}: transformation "
                f"'{alias}' refers to predicate '{result.value}', which is not listed in "
                "'predicates'"
            )
    if not is_sink:
        return
    # Kafka's SinkConnectorConfig.validate: whether topics and topics.regex are set is read
    # from the raw values, whatever their own validators said of them.
    topics_cv, regex_cv = values["topics"], values["topics.regex"]
    has_topics, has_regex = (_is_set(props.get(k)) for k in ("topics", "topics.regex"))
    if has_topics and has_regex:
        topics_cv.add_error_message(_MUTUALLY_EXCLUSIVE)
        regex_cv.add_error_message(_MUTUALLY_EXCLUSIVE)
    elif not has_topics and not has_regex:
        topics_cv.add_error_message(_NEED_TOPICS)
        regex_cv.add_error_message(_NEED_TOPICS)
    # A clash is the consumed topics' error (the list shown as Java prints one), each
    # checked on its own.
    dlq = values["errors.deadletterqueue.topic.name"].value
    if not dlq:
        return
    # Kafka's list of the consumed topics has each name once, in order (`t1, t1` is [t1])
    topics = list(dict.fromkeys(t for t in (topics_cv.value or []) if t))
    if dlq in topics:
        topics_cv.add_error_message(
            f"The DLQ topic '{dlq}' may not be included in the list of topics "
            f"('topics=[{', '.join(topics)}]') consumed by the connector"
        )
    regex = regex_cv.value or ""
    if regex and _matches(regex, dlq):
        regex_cv.add_error_message(
            f"The DLQ topic '{dlq}' may not be matched by the regex for the topics "
            f"('topics.regex={regex}') consumed by the connector"
        )


def _matches(regex: str, topic: str) -> bool:
    """Whether a ``topics.regex`` matches ``topic`` (one Java refuses, its own error, none)."""
    try:
        return compile_topics_regex(regex).fullmatch(topic) is not None
    except JavaRegexError:
        return False


def _is_set(value: object) -> bool:
    """Java's ``Utils.isBlank`` negated (a parsed list: not empty). Blank is what Java's
    ``trim()`` empties: characters up to U+0020 only, so a no-break space or an em quad
    (``topics.regex="\u2000"``) is a value."""
    if isinstance(value, str):
        return any(c > " " for c in value)
    return bool(value)


def validate_connector_config(
    props: Mapping[str, object], is_sink: bool | None, *, topic_creation_enabled: bool = True
) -> list[ConfigValue]:
    """Validate ``props`` without raising: one :class:`ConfigValue` per key of the enriched table.

    Covers every single-key rule of the table plus the cross-key rules: a sink needs
    exactly one of ``topics``/``topics.regex``, its dead letter queue topic must not be
    one it consumes, and a transformation's ``predicate`` must be a listed predicate.
    Keys the table does not define (the connector's own) are not in the result; the
    plugin's ``validate()`` covers them.
    """
    config_def = connector_config_def(props, is_sink, topic_creation_enabled=topic_creation_enabled)
    results = config_def.validate(props)
    _cross_key_errors({r.name: r for r in results}, is_sink, props)
    return results


def connector_config_infos(
    props: Mapping[str, object],
    is_sink: bool | None,
    name: str = "",
    *,
    topic_creation_enabled: bool = True,
) -> dict[str, Any]:
    """The REST ``config/validate`` body for the runtime's keys (cross-key errors included)."""
    config_def = connector_config_def(props, is_sink, topic_creation_enabled=topic_creation_enabled)
    infos = config_infos(config_def, props, name)
    extra = {
        r.name: r.error_messages
        for r in validate_connector_config(
            props, is_sink, topic_creation_enabled=topic_creation_enabled
        )
    }
    error_count = 0
    for entry in infos["configs"]:
        entry["value"]["errors"] = list(extra.get(entry["value"]["name"], entry["value"]["errors"]))
        error_count += len(entry["value"]["errors"])
    infos["error_count"] = error_count
    return infos


class TransformSpec(NamedTuple):
    """One entry of ``transforms``, as the worker needs it to build the chain."""

    alias: str
    type: str
    config: dict[str, str]
    """``transforms.<alias>.*`` with the prefix, ``type``, ``predicate`` and ``negate`` removed."""
    predicate: str | None
    negate: bool


class PredicateSpec(NamedTuple):
    """One entry of ``predicates``."""

    type: str
    config: dict[str, str]
    """``predicates.<alias>.*`` with the prefix and ``type`` removed."""


_INVALID_HEADER = "Connector configuration is invalid and contains the following {n} error(s):"


class ConnectorConfig(AbstractConfig):
    """A parsed, frozen connector configuration.

    Example:
        >>> cfg = ConnectorConfig.from_properties(
        ...     {"name": "s", "connector.class": "FileStreamSink", "topics": "a,b"}, is_sink=True)
        >>> cfg.topics, cfg.tasks_max
        (['a', 'b'], 1)
    """

    _is_sink: bool | None

    def __init__(
        self,
        props: Mapping[str, str],
        is_sink: bool | None = None,
        *,
        topic_creation_enabled: bool = True,
    ) -> None:
        """Parse ``props``; prefer :meth:`from_properties`.

        Raises:
            ConfigException: Listing every error. With one error the message is that
                error (e.g. ``Missing required configuration "connector.class" which has
                no default value.``); ``name`` is the first offending key.
        """
        config_def = connector_config_def(
            props, is_sink, topic_creation_enabled=topic_creation_enabled
        )
        results = config_def.validate(props)
        _cross_key_errors({r.name: r for r in results}, is_sink, props)
        problems = [(r.name, m) for r in results for m in r.error_messages]
        if problems:
            messages = list(dict.fromkeys(m for _, m in problems))  # shared cross-key messages once
            text = (
                messages[0]
                if len(messages) == 1
                else "\n".join([_INVALID_HEADER.format(n=len(messages)), *messages])
            )
            exc = ConfigException(text)
            exc.name = problems[0][0]
            exc.problems = problems  # type: ignore[attr-defined]
            raise exc
        object.__setattr__(self, "_is_sink", is_sink)
        super().__init__(config_def, props)

    @classmethod
    def from_properties(
        cls,
        props: Mapping[str, str],
        is_sink: bool | None = None,
        *,
        topic_creation_enabled: bool = True,
    ) -> ConnectorConfig:
        """Parse a connector configuration (``is_sink=None``: kind not known, common keys only).

        Raises:
            ConfigException: If any key is missing or invalid (see the constructor).
        """
        return cls(props, is_sink, topic_creation_enabled=topic_creation_enabled)

    def _with_prefix(self, prefix: str) -> dict[str, str]:
        return {
            k[len(prefix) :]: str(v) for k, v in self.originals().items() if k.startswith(prefix)
        }

    def _optional(self, key: str) -> Any:
        return self.get(key) if key in self.config_def else None

    @property
    def is_sink(self) -> bool | None:
        """``True`` for a sink, ``False`` for a source, ``None`` if parsed without a kind."""
        return self._is_sink

    @property
    def name(self) -> str:
        """The connector's name."""
        return self.get("name")  # type: ignore[no-any-return]

    @property
    def connector_class(self) -> str:
        """Connector class name or alias."""
        return self.get("connector.class")  # type: ignore[no-any-return]

    @property
    def plugin_version(self) -> str | None:
        """Requested connector plugin version (KIP-891), if any."""
        return self.get("connector.plugin.version")  # type: ignore[no-any-return]

    @property
    def tasks_max(self) -> int:
        """Maximum number of tasks."""
        return self.get("tasks.max")  # type: ignore[no-any-return]

    @property
    def tasks_max_enforce(self) -> bool:
        """Whether generating more than ``tasks_max`` tasks fails the connector."""
        return self.get("tasks.max.enforce")  # type: ignore[no-any-return]

    @property
    def task_restart_policy(self) -> str:
        """``none`` or ``on-failure``."""
        return str(self.get("task.restart.policy")).lower()

    @property
    def task_restart_max_attempts(self) -> int:
        return self.get("task.restart.max.attempts")  # type: ignore[no-any-return]

    @property
    def task_restart_backoff_initial_ms(self) -> int:
        return self.get("task.restart.backoff.initial.ms")  # type: ignore[no-any-return]

    @property
    def task_restart_backoff_max_ms(self) -> int:
        return self.get("task.restart.backoff.max.ms")  # type: ignore[no-any-return]

    @property
    def config_action_reload(self) -> str:
        """``none`` or ``restart``."""
        return str(self.get("config.action.reload")).lower()

    def plugin_config(self) -> dict[str, str]:
        """Every original key: the connector receives all of them, as in Kafka."""
        return {k: v if isinstance(v, str) else str(v) for k, v in self.originals().items()}

    def transforms(self) -> list[TransformSpec]:
        """The transformation chain in order."""
        specs = []
        for alias in self.get("transforms"):
            prefix = f"transforms.{alias}."
            config = {
                k: v for k, v in self._with_prefix(prefix).items() if k not in _TRANSFORM_RESERVED
            }
            specs.append(
                TransformSpec(
                    alias,
                    self.get(prefix + "type"),
                    config,
                    self.get(prefix + "predicate") or None,
                    self.get(prefix + "negate"),
                )
            )
        return specs

    def predicates(self) -> dict[str, PredicateSpec]:
        """Predicates by alias."""
        return {
            alias: PredicateSpec(
                self.get(f"predicates.{alias}.type"),
                {k: v for k, v in self._with_prefix(f"predicates.{alias}.").items() if k != "type"},
            )
            for alias in self.get("predicates")
        }

    def converter_class(self, which: str) -> str | None:
        """The connector's own class for converter ``which`` (e.g. ``value.converter``), or None."""
        if which not in CONVERTER_KEYS:
            raise ValueError(f"which must be one of {', '.join(CONVERTER_KEYS)}, not {which!r}")
        return self.get(which)  # type: ignore[no-any-return]

    def converter_config(self, which: str) -> dict[str, str] | None:
        """``<which>.*`` without the prefix; ``None`` if the connector uses the worker's converter.

        As in Kafka, converter settings without a converter class are ignored: the worker's
        converter keeps the worker's settings.
        """
        if self.converter_class(which) is None:
            return None
        return self._with_prefix(f"{which}.")

    def producer_overrides(self) -> dict[str, str]:
        """``producer.override.*`` with the prefix removed."""
        return self._with_prefix("producer.override.")

    def consumer_overrides(self) -> dict[str, str]:
        """``consumer.override.*`` with the prefix removed."""
        return self._with_prefix("consumer.override.")

    def admin_overrides(self) -> dict[str, str]:
        """``admin.override.*`` with the prefix removed."""
        return self._with_prefix("admin.override.")

    # --- error handling -------------------------------------------------------------------
    @property
    def errors_retry_timeout_ms(self) -> int:
        """Total retry time; 0 = none, -1 = forever."""
        return self.get("errors.retry.timeout")  # type: ignore[no-any-return]

    @property
    def errors_retry_delay_max_ms(self) -> int:
        """Longest delay between retries."""
        return self.get("errors.retry.delay.max.ms")  # type: ignore[no-any-return]

    @property
    def errors_tolerance(self) -> str:
        """``none`` or ``all``."""
        return str(self.get("errors.tolerance"))

    @property
    def errors_log_enable(self) -> bool:
        """Whether errors are logged."""
        return self.get("errors.log.enable")  # type: ignore[no-any-return]

    @property
    def errors_log_include_messages(self) -> bool:
        """Whether logged errors include the record."""
        return self.get("errors.log.include.messages")  # type: ignore[no-any-return]

    @property
    def errors_deadletterqueue_topic_name(self) -> str | None:
        """Dead letter queue topic (sinks), or ``None``."""
        return self._optional("errors.deadletterqueue.topic.name") or None

    @property
    def errors_deadletterqueue_topic_replication_factor(self) -> int | None:
        """Replication factor of a created DLQ topic (sinks)."""
        return self._optional("errors.deadletterqueue.topic.replication.factor")  # type: ignore[no-any-return]

    @property
    def errors_deadletterqueue_context_headers_enable(self) -> bool:
        """Whether dead-lettered records get ``__connect.errors.*`` headers (sinks)."""
        return bool(self._optional("errors.deadletterqueue.context.headers.enable"))

    # --- sink -----------------------------------------------------------------------------
    @property
    def topics(self) -> list[str]:
        """Topics a sink consumes (empty for sources or when ``topics.regex`` is used)."""
        return [t for t in (self._optional("topics") or []) if t]

    @property
    def topics_regex(self) -> str | None:
        """Regex of the topics a sink consumes, or ``None``."""
        return self._optional("topics.regex") or None

    # --- source ---------------------------------------------------------------------------
    @property
    def topic_creation_groups(self) -> list[str]:
        """Topic creation group aliases (sources)."""
        return list(self._optional("topic.creation.groups") or [])

    @property
    def exactly_once_support(self) -> str | None:
        """``requested`` or ``required`` (sources)."""
        value = self._optional("exactly.once.support")
        return None if value is None else str(value).lower()

    @property
    def transaction_boundary(self) -> str | None:
        """``poll``, ``interval`` or ``connector`` (sources)."""
        value = self._optional("transaction.boundary")
        return None if value is None else str(value).lower()

    @property
    def transaction_boundary_interval_ms(self) -> int | None:
        """Transaction length for ``interval`` boundaries, if set (sources)."""
        return self._optional("transaction.boundary.interval.ms")  # type: ignore[no-any-return]

    @property
    def offsets_storage_topic(self) -> str | None:
        """The connector's own offsets topic, if set (sources)."""
        return self._optional("offsets.storage.topic")  # type: ignore[no-any-return]
