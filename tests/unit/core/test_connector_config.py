"""Connector configuration tables, cross-key validation and the typed view."""

from __future__ import annotations

import pytest
from plugin_api.config import ConfigValue
from plugin_api.errors import ConfigException

from core.connector_config import (
    CONNECTOR_CONFIG_DEF,
    SINK_CONNECTOR_CONFIG_DEF,
    SOURCE_CONNECTOR_CONFIG_DEF,
    ConnectorConfig,
    connector_config_def,
    connector_config_infos,
    validate_connector_config,
)

SINK = {"name": "sink", "connector.class": "FileStreamSink", "topics": "orders"}
SOURCE = {"name": "src", "connector.class": "FileStreamSource"}

# The key set ST/connect_rest_test.py expects from a source connector's validate response,
# minus the plugin's own keys.
KAFKA_SOURCE_KEYS = {
    "name",
    "connector.class",
    "tasks.max",
    "key.converter",
    "value.converter",
    "header.converter",
    "transforms",
    "predicates",
    "config.action.reload",
    "errors.retry.timeout",
    "errors.retry.delay.max.ms",
    "errors.tolerance",
    "errors.log.enable",
    "errors.log.include.messages",
    "topic.creation.groups",
    "exactly.once.support",
    "transaction.boundary",
    "transaction.boundary.interval.ms",
    "offsets.storage.topic",
    "tasks.max.enforce",
}


def _errors(results: list[ConfigValue]) -> dict[str, list[str]]:
    return {r.name: r.error_messages for r in results if r.error_messages}


def _error(props: dict[str, str], is_sink: bool | None) -> ConfigException:
    with pytest.raises(ConfigException) as info:
        ConnectorConfig.from_properties(props, is_sink)
    return info.value


def test_key_sets_match_kafka() -> None:
    # Ours beyond Kafka's: KIP-891's version pin, the plugin host's memory limit, automatic
    # restarts, and where tasks run (docs/spark.md).
    assert set(SOURCE_CONNECTOR_CONFIG_DEF.names()) == KAFKA_SOURCE_KEYS | {
        "connector.plugin.version",
        "task.runtime",
        "plugin.host.memory.max.bytes",
        "task.restart.policy",
        "task.restart.max.attempts",
        "task.restart.backoff.initial.ms",
        "task.restart.backoff.max.ms",
    }
    assert set(SINK_CONNECTOR_CONFIG_DEF.names()) - set(CONNECTOR_CONFIG_DEF.names()) == {
        "topics",
        "topics.regex",
        "errors.deadletterqueue.topic.name",
        "errors.deadletterqueue.topic.replication.factor",
        "errors.deadletterqueue.context.headers.enable",
    }


def test_groups_match_kafka() -> None:
    assert SOURCE_CONNECTOR_CONFIG_DEF.groups() == [
        "Common",
        "Transforms",
        "Predicates",
        "Error Handling",
        "Topic Creation",
        "Exactly Once Support",
        "offsets.topic",
    ]
    assert SINK_CONNECTOR_CONFIG_DEF.groups() == [
        "Common",
        "Transforms",
        "Predicates",
        "Error Handling",
    ]
    assert SINK_CONNECTOR_CONFIG_DEF.keys["topics"].group == "Common"
    assert (
        SINK_CONNECTOR_CONFIG_DEF.keys["errors.deadletterqueue.topic.name"].group
        == "Error Handling"
    )


def test_defaults() -> None:
    cfg = ConnectorConfig.from_properties(SINK, is_sink=True)
    assert (cfg.name, cfg.connector_class, cfg.tasks_max, cfg.tasks_max_enforce) == (
        "sink",
        "FileStreamSink",
        1,
        True,
    )
    assert cfg.plugin_version is None
    assert cfg.config_action_reload == "restart"
    assert cfg.errors_retry_timeout_ms == 0
    assert cfg.errors_retry_delay_max_ms == 60_000
    assert cfg.errors_tolerance == "none"
    assert cfg.errors_log_enable is False and cfg.errors_log_include_messages is False
    assert cfg.errors_deadletterqueue_topic_name is None
    assert cfg.errors_deadletterqueue_topic_replication_factor == 3
    assert cfg.errors_deadletterqueue_context_headers_enable is False
    assert cfg.topics == ["orders"] and cfg.topics_regex is None
    assert cfg.transforms() == [] and cfg.predicates() == {}
    assert cfg.converter_class("value.converter") is None
    assert cfg.converter_config("value.converter") is None

    src = ConnectorConfig.from_properties(SOURCE, is_sink=False)
    assert src.exactly_once_support == "requested"
    assert src.transaction_boundary == "poll"
    assert src.transaction_boundary_interval_ms is None
    assert src.offsets_storage_topic is None
    assert src.topic_creation_groups == []
    assert src.topics == [] and src.errors_deadletterqueue_topic_name is None


def test_typed_values_and_case_insensitive_enums() -> None:
    cfg = ConnectorConfig.from_properties(
        {
            **SOURCE,
            "tasks.max": "4",
            "errors.tolerance": "all",
            "errors.retry.timeout": "-1",
            "exactly.once.support": "Required",
            "transaction.boundary": "INTERVAL",
            "transaction.boundary.interval.ms": "500",
            "connector.plugin.version": "[1.0,2.0)",
            "offsets.storage.topic": "my-offsets",
        },
        is_sink=False,
    )
    assert cfg.tasks_max == 4
    assert cfg.errors_tolerance == "all"
    assert cfg.errors_retry_timeout_ms == -1
    assert cfg.exactly_once_support == "required"
    assert cfg.transaction_boundary == "interval"
    assert cfg.transaction_boundary_interval_ms == 500
    assert cfg.plugin_version == "[1.0,2.0)"
    assert cfg.offsets_storage_topic == "my-offsets"


@pytest.mark.parametrize("value", ["ALL", "None"])
def test_errors_tolerance_is_case_sensitive_as_kafkas_valid_string(value: str) -> None:
    errors = _errors(validate_connector_config({**SINK, "errors.tolerance": value}, True))
    assert errors == {
        "errors.tolerance": [
            f"Invalid value {value} for configuration errors.tolerance: "
            "String must be one of: none, all"
        ]
    }


def test_errors_numbers_have_no_range_as_in_kafka() -> None:
    """Kafka's ConnectorConfig/SinkConnectorConfig define these without a validator."""
    props = {
        **SINK,
        "errors.retry.timeout": "-5",
        "errors.retry.delay.max.ms": "-1",
        "errors.deadletterqueue.topic.name": "dlq",
        "errors.deadletterqueue.topic.replication.factor": "0",
    }
    assert _errors(validate_connector_config(props, is_sink=True)) == {}
    cfg = ConnectorConfig.from_properties(props, is_sink=True)
    assert cfg.errors_retry_timeout_ms == -5
    assert cfg.errors_retry_delay_max_ms == -1
    assert cfg.errors_deadletterqueue_topic_replication_factor == 0


def test_missing_connector_class_message() -> None:
    err = _error({"name": "x"}, None)
    assert (
        str(err) == 'Missing required configuration "connector.class" which has no default value.'
    )
    assert err.name == "connector.class"


def test_several_errors_reported_together() -> None:
    err = _error({"name": "x", "tasks.max": "0", "errors.tolerance": "some"}, is_sink=True)
    text = str(err)
    assert text.startswith(
        "Connector configuration is invalid and contains the following 4 error(s):"
    )
    assert '"connector.class"' in text
    assert "Invalid value 0 for configuration tasks.max" in text
    assert "Invalid value some for configuration errors.tolerance" in text
    assert "Must configure one of topics or topics.regex" in text
    assert text.count("Must configure one of topics or topics.regex") == 1


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("", "String may not be empty"),
        ("   ", "String may not be empty"),
        ("bad\x07name", "had the following ASCII chars: 7"),
        ("new\u0085li\x01\x01ne", "had the following ASCII chars: 133, 1, 1"),
    ],
)
def test_connector_name_rules(name: str, fragment: str) -> None:
    errors = _errors(validate_connector_config({**SOURCE, "name": name}, is_sink=False))
    assert list(errors) == ["name"]
    assert fragment in errors["name"][0]


def test_sink_topics_rules() -> None:
    neither = _errors(validate_connector_config({"name": "s", "connector.class": "X"}, True))
    assert neither == {
        "topics": ["Must configure one of topics or topics.regex"],
        "topics.regex": ["Must configure one of topics or topics.regex"],
    }
    both = _errors(validate_connector_config({**SINK, "topics.regex": "o.*"}, True))
    message = "topics and topics.regex are mutually exclusive options, but both are set."
    assert both == {"topics": [message], "topics.regex": [message]}
    # Kafka asks whether the raw value is blank: " , " is set (to two empty names)
    assert _errors(validate_connector_config({**SINK, "topics": " , "}, True)) == {}
    # ... and blank is what Java's trim() empties: a no-break space or an em quad is a value
    for spaced in ("\u00a0", "\u2000"):
        both_set = _errors(validate_connector_config({**SINK, "topics.regex": spaced}, True))
        assert list(both_set) == ["topics", "topics.regex"], spaced
    blank = _errors(validate_connector_config({**SINK, "topics": " \x1c"}, True))
    assert "Must configure one of topics or topics.regex" in blank["topics"]
    # both set is an error whatever the keys' own validators said of them
    bad_regex = _errors(validate_connector_config({**SINK, "topics.regex": "a("}, True))
    assert bad_regex == {
        "topics": [message],
        "topics.regex": [
            "Invalid value a( for configuration topics.regex: Invalid regex: Unclosed group "
            "near index 2\na(",
            message,
        ],
    }
    assert (
        _errors(validate_connector_config({**SINK, "topics": "", "topics.regex": "o.*"}, True))
        == {}
    )


def test_sink_topics_parsing() -> None:
    cfg = ConnectorConfig.from_properties({**SINK, "topics": "a, b ,c"}, True)
    assert cfg.topics == ["a", "b", "c"]
    rx = ConnectorConfig.from_properties(
        {"name": "s", "connector.class": "X", "topics.regex": "t-.*"}, True
    )
    assert rx.topics == [] and rx.topics_regex == "t-.*"


def test_invalid_topics_regex() -> None:
    errors = _errors(
        validate_connector_config({"name": "s", "connector.class": "X", "topics.regex": "(["}, True)
    )
    assert list(errors) == ["topics.regex"]
    assert "Invalid value ([ for configuration topics.regex" in errors["topics.regex"][0]


def test_topics_regex_has_javas_syntax_and_matches_whole_names() -> None:
    def errors(regex: str, dlq: str = "") -> dict[str, list[str]]:
        props = {"name": "s", "connector.class": "X", "topics.regex": regex}
        if dlq:
            props |= {"errors.deadletterqueue.topic.name": dlq}
        return _errors(validate_connector_config(props, True))

    assert errors("v(?i)1") == {}  # Java takes a flag anywhere; Python's re refused it
    assert errors("(?P<n>v1)")["topics.regex"] == [  # Java's PatternSyntaxException, as Kafka
        "Invalid value (?P<n>v1) for configuration topics.regex: Invalid regex: Unknown inline "
        "modifier near index 2\n(?P<n>v1)\n  ^"
    ]
    assert errors("lp", "lp-dlq") == {}  # matched as the runtime matches: the whole name
    assert errors("lp.*", "lp-dlq") != {}


def test_illegal_topic_names_are_refused_naming_them() -> None:
    errors = _errors(validate_connector_config({**SINK, "topics": "v1,bad topic!"}, True))
    assert errors == {
        "topics": [
            'Invalid value v1,bad topic! for configuration topics: Topic name "bad topic!" is '
            "illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        ]
    }
    assert _errors(validate_connector_config({**SINK, "topics": "v1,v1"}, True)) == {}


def test_a_dlq_clash_is_reported_beside_both_topic_keys_being_set() -> None:
    props = {
        **SINK,
        "topics": "dlq",
        "topics.regex": "d.q",
        "errors.deadletterqueue.topic.name": "dlq",
    }
    errors = _errors(validate_connector_config(props, True))
    both = "topics and topics.regex are mutually exclusive options, but both are set."
    assert errors["topics"][0] == errors["topics.regex"][0] == both
    assert "may not be included" in errors["topics"][1]
    assert "may not be matched" in errors["topics.regex"][1]


def test_a_dlq_clash_names_each_consumed_topic_once() -> None:
    props = {**SINK, "topics": "t1, t2, t1", "errors.deadletterqueue.topic.name": "t1"}
    assert _errors(validate_connector_config(props, True))["topics"] == [
        "The DLQ topic 't1' may not be included in the list of topics ('topics=[t1, t2]') "
        "consumed by the connector"
    ]


def test_dlq_topic_may_not_be_consumed() -> None:
    # Kafka's SinkConnectorConfig.validate reports the clash under topics / topics.regex.
    errors = _errors(
        validate_connector_config(
            {**SINK, "topics": "orders, dlq", "errors.deadletterqueue.topic.name": "dlq"}, True
        )
    )
    assert errors == {
        "topics": [
            "The DLQ topic 'dlq' may not be included in the list of topics "
            "('topics=[orders, dlq]') consumed by the connector"
        ]
    }
    regex = _errors(
        validate_connector_config(
            {
                "name": "s",
                "connector.class": "X",
                "topics.regex": "d.*",
                "errors.deadletterqueue.topic.name": "dlq",
            },
            True,
        )
    )
    assert regex == {
        "topics.regex": [
            "The DLQ topic 'dlq' may not be matched by the regex for the topics "
            "('topics.regex=d.*') consumed by the connector"
        ]
    }
    ok = ConnectorConfig.from_properties(
        {
            **SINK,
            "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
        True,
    )
    assert ok.errors_deadletterqueue_topic_name == "dlq"
    assert ok.errors_deadletterqueue_topic_replication_factor == 1
    assert ok.errors_deadletterqueue_context_headers_enable is True


def test_source_does_not_apply_sink_rules() -> None:
    assert _errors(validate_connector_config(SOURCE, is_sink=False)) == {}
    assert "topics" not in {r.name for r in validate_connector_config(SOURCE, is_sink=False)}


TRANSFORMING = {
    **SINK,
    "transforms": "mask, route",
    "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
    "transforms.mask.fields": "ssn,card",
    "transforms.mask.replacement": "***",
    "transforms.route.type": "RegexRouter",
    "transforms.route.regex": "(.*)",
    "transforms.route.replacement": "copy-$1",
    "transforms.route.predicate": "isOrders",
    "transforms.route.negate": "true",
    "predicates": "isOrders",
    "predicates.isOrders.type": "TopicNameMatches",
    "predicates.isOrders.pattern": "orders",
}


def test_transforms_and_predicates_parsing() -> None:
    cfg = ConnectorConfig.from_properties(TRANSFORMING, True)
    mask, route = cfg.transforms()
    assert mask == (
        "mask",
        "org.apache.kafka.connect.transforms.MaskField$Value",
        {"fields": "ssn,card", "replacement": "***"},
        None,
        False,
    )
    assert route.alias == "route" and route.type == "RegexRouter"
    assert route.config == {"regex": "(.*)", "replacement": "copy-$1"}
    assert route.predicate == "isOrders" and route.negate is True
    assert cfg.predicates() == {"isOrders": ("TopicNameMatches", {"pattern": "orders"})}


def test_plugin_config_is_every_original_key() -> None:
    cfg = ConnectorConfig.from_properties({**TRANSFORMING, "file": "/tmp/out", "x.y": "z"}, True)
    assert cfg.plugin_config() == {**TRANSFORMING, "file": "/tmp/out", "x.y": "z"}


def test_missing_transform_type_is_reported_on_its_key() -> None:
    errors = _errors(
        validate_connector_config({**SINK, "transforms": "a,b", "transforms.a.type": "X"}, True)
    )
    assert errors == {
        "transforms.b.type": [
            'Missing required configuration "transforms.b.type" which has no default value.'
        ]
    }


def test_missing_predicate_type_is_reported_on_its_key() -> None:
    errors = _errors(validate_connector_config({**SINK, "predicates": "p"}, True))
    assert list(errors) == ["predicates.p.type"]


def test_duplicate_and_empty_aliases() -> None:
    dup = _errors(
        validate_connector_config({**SINK, "transforms": "a,a", "transforms.a.type": "X"}, True)
    )
    assert dup == {
        "transforms": [
            "Invalid value [a, a] for configuration transforms: Duplicate alias provided."
        ]
    }
    # Kafka keeps empty entries: an empty alias is one more alias (whose type is missing),
    # and two of them a duplicate
    empty = _errors(
        validate_connector_config({**SINK, "predicates": "p,,", "predicates.p.type": "Y"}, True)
    )
    assert empty == {
        "predicates": [
            "Invalid value [p, , ] for configuration predicates: Duplicate alias provided."
        ],
        "predicates..type": [
            'Missing required configuration "predicates..type" which has no default value.'
        ],
    }
    trailing = {**SINK, "transforms": "a,", "transforms.a.type": "X", "transforms..type": "X"}
    assert _errors(validate_connector_config(trailing, True)) == {}
    assert [t.alias for t in ConnectorConfig.from_properties(trailing, True).transforms()] == [
        "a",
        "",
    ]


def test_transform_predicate_must_be_defined() -> None:
    props = {**SINK, "transforms": "t", "transforms.t.type": "X", "transforms.t.predicate": "nope"}
    errors = _errors(validate_connector_config(props, True))
    assert list(errors) == ["transforms.t.predicate"]
    assert "'nope'" in errors["transforms.t.predicate"][0]
    assert _error(props, True).name == "transforms.t.predicate"


def test_negate_without_a_predicate_is_an_error_of_the_transform_type() -> None:
    # Kafka's ConnectorConfig.enrich (validateProps, run by the type's validator): a negate
    # key without a predicate key, whatever its value, is refused on transforms.<alias>.type.
    message = (
        "Config 'transforms.t.negate' was provided but there is no config "
        "'transforms.t.predicate' defining a predicate to be negated."
    )
    for negate in ("true", "false"):
        props = {**SINK, "transforms": "t", "transforms.t.type": "X", "transforms.t.negate": negate}
        assert _errors(validate_connector_config(props, True)) == {"transforms.t.type": [message]}
        error = _error(props, True)
        assert str(error) == message and error.name == "transforms.t.type"
    # A predicate key (a listed predicate) and no negate key are both fine.
    fine = {**SINK, "transforms": "t", "transforms.t.type": "X"}
    assert _errors(validate_connector_config(fine, True)) == {}
    with_predicate = {
        **fine,
        "transforms.t.predicate": "p",
        "transforms.t.negate": "true",
        "predicates": "p",
        "predicates.p.type": "Y",
    }
    assert _errors(validate_connector_config(with_predicate, True)) == {}


def test_invalid_negate_value() -> None:
    errors = _errors(
        validate_connector_config(
            {**SINK, "transforms": "t", "transforms.t.type": "X", "transforms.t.negate": "maybe"},
            True,
        )
    )
    # (and, as in Kafka, a negate key without a predicate is the type's error too)
    assert sorted(errors) == ["transforms.t.negate", "transforms.t.type"]


def test_enriched_definition_has_per_alias_groups() -> None:
    d = connector_config_def(TRANSFORMING, True)
    assert d.groups() == [
        "Common",
        "Transforms",
        "Predicates",
        "Error Handling",
        "Transforms: mask",
        "Transforms: route",
        "Predicates: isOrders",
    ]
    assert d.keys["transforms.mask.type"].required


def test_converter_overrides() -> None:
    cfg = ConnectorConfig.from_properties(
        {
            **SINK,
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "key.converter.schemas.enable": "true",
        },
        True,
    )
    assert cfg.converter_class("value.converter") == "org.apache.kafka.connect.json.JsonConverter"
    assert cfg.converter_config("value.converter") == {"schemas.enable": "false"}
    # Settings without a converter class are ignored: the worker's converter is used.
    assert cfg.converter_class("key.converter") is None
    assert cfg.converter_config("key.converter") is None
    with pytest.raises(ValueError):
        cfg.converter_class("converter")


def test_client_overrides() -> None:
    cfg = ConnectorConfig.from_properties(
        {
            **SINK,
            "consumer.override.max.poll.records": "10",
            "producer.override.linger.ms": "1",
            "admin.override.retries": "2",
        },
        True,
    )
    assert cfg.consumer_overrides() == {"max.poll.records": "10"}
    assert cfg.producer_overrides() == {"linger.ms": "1"}
    assert cfg.admin_overrides() == {"retries": "2"}


def test_topic_creation_requires_default_group_settings() -> None:
    props = {**SOURCE, "topic.creation.default.partitions": "3"}
    errors = _errors(validate_connector_config(props, is_sink=False))
    assert list(errors) == ["topic.creation.default.replication.factor"]
    # The worker's topic.creation.enable=false turns the check off, as in Kafka.
    assert (
        _errors(validate_connector_config(props, is_sink=False, topic_creation_enabled=False)) == {}
    )
    ok = {
        **props,
        "topic.creation.default.replication.factor": "-1",
        "topic.creation.groups": "compacted",
        "topic.creation.compacted.include": "c-.*",
        "topic.creation.compacted.partitions": "1",
    }
    assert _errors(validate_connector_config(ok, is_sink=False)) == {}
    bad = {
        **ok,
        "topic.creation.compacted.partitions": "0",
        "topic.creation.compacted.include": "([",
    }
    assert set(_errors(validate_connector_config(bad, is_sink=False))) == {
        "topic.creation.compacted.partitions",
        "topic.creation.compacted.include",
    }


def test_config_infos_include_cross_key_errors() -> None:
    infos = connector_config_infos({"name": "s", "connector.class": "X"}, True, "FileStreamSink")
    assert infos["name"] == "FileStreamSink"
    assert infos["error_count"] == 2
    by_name = {c["value"]["name"]: c for c in infos["configs"]}
    assert by_name["topics"]["value"]["errors"] == ["Must configure one of topics or topics.regex"]
    assert (
        by_name["errors.deadletterqueue.topic.replication.factor"]["definition"]["default_value"]
        == "3"
    )
    assert "Error Handling" in infos["groups"]


def test_config_is_frozen_and_comparable() -> None:
    a = ConnectorConfig.from_properties(SINK, True)
    assert a == ConnectorConfig.from_properties(dict(SINK), True)
    with pytest.raises(AttributeError):
        a.name = "other"  # type: ignore[misc]


def test_an_empty_offsets_topic_is_refused_as_kafka_does() -> None:
    errors = _errors(
        validate_connector_config({**SOURCE, "offsets.storage.topic": ""}, is_sink=False)
    )
    assert errors == {
        "offsets.storage.topic": [
            "Invalid value  for configuration offsets.storage.topic: String must be non-empty"
        ]
    }
    unset = validate_connector_config(SOURCE, is_sink=False)
    assert _errors(unset) == {}
