"""ConfigDef parsing, validation and the REST config/validate shape."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from plugin_api.config import (
    NO_DEFAULT,
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    NonEmptyString,
    NonNullValidator,
    Password,
    Range,
    ValidList,
    ValidString,
    Width,
    config_infos,
)
from plugin_api.errors import ConfigException


def full_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(
            "topic",
            ConfigType.STRING,
            importance=Importance.HIGH,
            documentation="Target topic.",
            group="Common",
            order_in_group=1,
            width=Width.LONG,
            display_name="Topic",
            validator=NonEmptyString(),
        )
        .define("enabled", ConfigType.BOOLEAN, True, group="Common", order_in_group=2)
        .define("batch.size", ConfigType.INT, 100, Range.between(1, 1000), group="Tuning")
        .define("small", ConfigType.SHORT, 1)
        .define("max.bytes", ConfigType.LONG, 2**40, Range.at_least(0))
        .define("ratio", ConfigType.DOUBLE, 0.5)
        .define("fields", ConfigType.LIST, "", dependents=("topic",))
        .define("mode", ConfigType.STRING, "append", ValidString.in_("append", "upsert"))
        .define("class", ConfigType.CLASS, None)
        .define("secret", ConfigType.PASSWORD, None)
    )


def test_parse_defaults_and_types() -> None:
    parsed = full_def().parse({"topic": "t"})
    assert parsed == {
        "topic": "t",
        "enabled": True,
        "batch.size": 100,
        "small": 1,
        "max.bytes": 2**40,
        "ratio": 0.5,
        "fields": [],
        "mode": "append",
        "class": None,
        "secret": None,
    }


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("enabled", "FALSE", False),
        ("enabled", " True ", True),
        ("enabled", False, False),
        ("batch.size", "42", 42),
        ("batch.size", 7, 7),
        ("small", "-32768", -32768),
        ("max.bytes", "9223372036854775807", 2**63 - 1),
        ("ratio", "1e3", 1000.0),
        ("ratio", 2, 2.0),
        ("fields", " a , b,c ", ["a", "b", "c"]),
        ("fields", "", []),
        ("fields", ["x"], ["x"]),
        ("class", "com.example.Foo", "com.example.Foo"),
        ("topic", "  padded ", "padded"),
        # Java's String.trim and parseInt: no-break spaces stay, any Unicode digit counts
        ("topic", "\u00a0padded\t", "\u00a0padded"),
        ("fields", "a\u00a0 ,\tb", ["a\u00a0", "b"]),
        ("batch.size", "\u0665", 5),
    ],
)
def test_parse_each_type(key: str, raw: object, expected: object) -> None:
    assert full_def().parse({"topic": "t", key: raw})[key] == expected


def test_password_is_hidden() -> None:
    secret = full_def().parse({"topic": "t", "secret": "hunter2"})["secret"]
    assert isinstance(secret, Password) and secret.value == "hunter2"
    assert str(secret) == repr(secret) == "[hidden]"
    assert "hunter2" not in repr(AbstractConfig(full_def(), {"topic": "t", "secret": "hunter2"}))


@pytest.mark.parametrize(
    ("key", "raw", "reason"),
    [
        ("enabled", "yes", "either true or false"),
        ("batch.size", "ten", "Not a number of type INT"),
        ("batch.size", str(2**31), "Not a number of type INT"),
        ("batch.size", "1_000", "Not a number of type INT"),
        ("batch.size", "\u00a05", "Not a number of type INT"),  # Java's trim keeps it
        ("small", "40000", "Not a number of type SHORT"),
        ("max.bytes", str(2**63), "Not a number of type LONG"),
        ("ratio", "half", "DOUBLE"),
        ("batch.size", "0", "Value must be at least 1"),
        ("batch.size", "1001", "no more than 1000"),
        ("mode", "replace", "String must be one of: append, upsert"),
        ("topic", "", "non-empty"),
    ],
)
def test_parse_errors_name_key_and_value(key: str, raw: str, reason: str) -> None:
    props = {"topic": "t", key: raw}
    with pytest.raises(ConfigException, match=reason) as info:
        full_def().parse(props)
    assert info.value.name == key
    assert str(info.value).startswith(f"Invalid value {raw} for configuration {key}")


def test_missing_required() -> None:
    with pytest.raises(ConfigException) as info:
        full_def().parse({})
    assert str(info.value) == 'Missing required configuration "topic" which has no default value.'
    assert info.value.name == "topic"


def test_define_rejects_duplicates_and_bad_defaults() -> None:
    with pytest.raises(ConfigException, match="defined twice"):
        ConfigDef().define("a", ConfigType.INT, 1).define("a", ConfigType.INT, 2)
    with pytest.raises(ConfigException, match="at least 5"):
        ConfigDef().define("a", ConfigType.INT, 1, Range.at_least(5))
    assert ConfigDef().define("a", ConfigType.INT, "3").keys["a"].default == 3
    assert ConfigDef().define("a", ConfigType.INT).keys["a"].default is NO_DEFAULT


def test_validate_collects_errors_for_every_key() -> None:
    results = full_def().validate(
        {"enabled": "maybe", "batch.size": "0", "mode": "x", "ratio": "1.5", "extra": "ignored"}
    )
    by_name = {r.name: r for r in results}
    assert list(by_name) == full_def().names()
    assert by_name["topic"].error_messages == [
        'Missing required configuration "topic" which has no default value.'
    ]
    assert "either true or false" in by_name["enabled"].error_messages[0]
    assert "at least 1" in by_name["batch.size"].error_messages[0]
    assert "one of" in by_name["mode"].error_messages[0]
    assert by_name["ratio"].error_messages == [] and by_name["ratio"].value == 1.5
    assert sum(len(r.error_messages) for r in results) == 4


class ModeRecommender:
    def valid_values(self, name: str, parsed_config: Mapping[str, object]) -> list[object]:
        return ["append", "upsert"]

    def visible(self, name: str, parsed_config: Mapping[str, object]) -> bool:
        return parsed_config.get("enabled") is True


def test_config_infos_shape() -> None:
    cdef = full_def().define("rec", ConfigType.STRING, "append", recommender=ModeRecommender())
    cdef.define_internal("internal.x", ConfigType.INT, 1)
    infos = config_infos(
        cdef,
        {"topic": "t", "batch.size": "5000", "secret": "s3cret", "enabled": "false"},
        name="com.example.Sink",
    )
    assert set(infos) == {"name", "error_count", "groups", "configs"}
    assert infos["name"] == "com.example.Sink"
    assert infos["error_count"] == 1
    assert infos["groups"] == ["Common", "Tuning"]
    names = [c["definition"]["name"] for c in infos["configs"]]
    assert "internal.x" not in names and names[0] == "topic"
    topic = infos["configs"][0]
    assert topic["definition"] == {
        "name": "topic",
        "type": "STRING",
        "required": True,
        "default_value": None,
        "importance": "HIGH",
        "documentation": "Target topic.",
        "group": "Common",
        "width": "LONG",
        "display_name": "Topic",
        "dependents": [],
        "order": 1,
    }
    assert topic["value"] == {
        "name": "topic",
        "value": "t",
        "recommended_values": [],
        "errors": [],
        "visible": True,
    }
    by_name = {c["definition"]["name"]: c for c in infos["configs"]}
    assert by_name["batch.size"]["value"]["errors"] == [
        "Invalid value 5000 for configuration batch.size: Value must be no more than 1000"
    ]
    assert by_name["enabled"]["definition"]["default_value"] == "true"
    assert by_name["enabled"]["value"]["value"] == "false"
    assert by_name["secret"]["value"]["value"] == "[hidden]"
    assert by_name["fields"]["definition"]["dependents"] == ["topic"]
    assert by_name["rec"]["value"]["recommended_values"] == ["append", "upsert"]
    assert by_name["rec"]["value"]["visible"] is False
    assert by_name["max.bytes"]["definition"]["default_value"] == str(2**40)


def test_validators_describe_valid_values() -> None:
    assert str(Range.at_least(1)) == "[1,...]"
    assert str(Range.between(1, 10)) == "[1,...,10]"
    assert str(ValidString.in_("a", "b")) == "[a, b]"
    assert "case insensitive" in str(CaseInsensitiveValidString.in_("A"))
    assert str(NonEmptyString()) == "non-empty string"
    assert str(LambdaValidator(lambda n, v: None, "an even number")) == "an even number"


def test_other_validators() -> None:
    CaseInsensitiveValidString.in_("JSON", "AVRO")("f", "json")
    with pytest.raises(ConfigException, match="case insensitive"):
        CaseInsensitiveValidString.in_("JSON")("f", "xml")
    with pytest.raises(ConfigException):
        NonNullValidator()("k", None)
    ValidList.in_("a", "b")("k", ["a", "b", "a"])
    with pytest.raises(ConfigException, match="Invalid value c for configuration k"):
        ValidList.in_("a", "b")("k", ["a", "c"])

    def even(name: str, value: object) -> None:
        if value % 2:  # type: ignore[operator]
            raise ConfigException(name, value, "must be even")

    cdef = ConfigDef().define("n", ConfigType.INT, 2, LambdaValidator(even, "even"))
    with pytest.raises(ConfigException, match="must be even"):
        cdef.parse({"n": "3"})
    with pytest.raises(ConfigException, match="Value must be positive"):
        LambdaValidator(lambda n, v: v > 0, "positive")("n", -1)  # type: ignore[operator]


def test_merge_names_and_keys() -> None:
    framework = ConfigDef().define("name", ConfigType.STRING).define("tasks.max", ConfigType.INT, 1)
    plugin = ConfigDef().define("tasks.max", ConfigType.INT, 4).define("file", ConfigType.STRING)
    merged = framework.merge(plugin)
    assert merged.names() == ["name", "tasks.max", "file"]
    assert merged.keys["tasks.max"].default == 4  # the plugin's definition wins
    assert framework.names() == ["name", "tasks.max"]


def test_abstract_config() -> None:
    cfg = AbstractConfig(
        full_def(),
        {
            "topic": "t",
            "batch.size": "5",
            "producer.acks": "all",
            "producer.x": "1",
            "secret": "pw",
            "fields": "a,b",
        },
    )
    assert cfg.get_string("topic") == "t"
    assert cfg.get_int("batch.size") == 5
    assert cfg.get_long("max.bytes") == 2**40
    assert cfg.get_boolean("enabled") is True
    assert cfg.get_double("ratio") == 0.5
    assert cfg.get_list("fields") == ["a", "b"]
    assert cfg.get_password("secret").value == "pw"
    assert cfg.originals()["batch.size"] == "5"
    assert cfg.originals_with_prefix("producer.") == {"acks": "all", "x": "1"}
    assert cfg.originals_with_prefix("producer.", strip=False) == {
        "producer.acks": "all",
        "producer.x": "1",
    }
    assert cfg.values()["batch.size"] == 5
    assert cfg.unused() == {"producer.acks", "producer.x"}
    with pytest.raises(ConfigException, match="Unknown configuration"):
        cfg.get("nope")
    with pytest.raises(AttributeError):
        cfg.anything = 1  # type: ignore[attr-defined]
    with pytest.raises(ConfigException):
        AbstractConfig(full_def(), {})
