"""Config validation errors of transforms, predicates and converters, on Copycat and on
Apache Kafka Connect 4.1.1, side by side.

``PUT .../config/validate`` must give the same ``error_count`` and the same error list for
every key, and ``POST /connectors`` and ``PUT /connectors/<name>/config`` the same refusal.
Found by an exploratory comparison:
Kafka runs a key's validator on null when the key is missing (or did not parse) and reports
that error too (a missing MaskField ``fields`` is two errors: "Missing required
configuration" and "Empty list"); a plugin validator's message names the plugin's own short
key (``renames``, not ``transforms.x.renames``); a list value reads ``[a, b]``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.support.differential import Peer, create, create_refusal, delete, validation_errors

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

T = "org.apache.kafka.connect.transforms."
PLUGIN = "FileStreamSinkConnector"
BASE = {
    "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
    "tasks.max": "1",
    "topics": "validate-topic",
    "file": "/dev/null",
}


def _transform(kind: str, **props: str) -> dict[str, str]:
    return {
        "transforms": "x",
        "transforms.x.type": T + kind,
        **{f"transforms.x.{k.replace('__', '.')}": v for k, v in props.items()},
    }


def _predicate(kind: str, **props: str) -> dict[str, str]:
    return {
        **_transform("Filter", predicate="p"),
        "predicates": "p",
        "predicates.p.type": T + "predicates." + kind,
        **{f"predicates.p.{k}": v for k, v in props.items()},
    }


CASES = {
    # missing required keys: the validator runs on null as well
    "cast-no-spec": _transform("Cast$Value"),
    "regex-router-no-regex": _transform("RegexRouter", replacement="x"),
    "insert-header-no-value": _transform("InsertHeader", header="h"),
    "insert-header-no-header": _transform("InsertHeader", value__literal="v"),
    "value-to-key-no-fields": _transform("ValueToKey"),
    "mask-no-fields": _transform("MaskField$Value"),
    "topic-matches-no-pattern": _predicate("TopicNameMatches"),
    "tasks-max-not-a-number": {"tasks.max": "x"},
    # a plugin validator names its own key, a list reads [a, b]
    "replace-bad-renames": _transform("ReplaceField$Value", renames="a"),
    "timestamp-bad-target": _transform("TimestampConverter$Value", target__type="foo"),
    "header-from-bad-operation": _transform(
        "HeaderFrom$Value", fields="a", headers="h", operation="steal"
    ),
    "extract-v3": _transform("ExtractField$Value", field="a", field__syntax__version="V3"),
    "duplicate-alias": {"transforms": "x,x", "transforms.x.type": T + "Flatten$Value"},
    # a class that is not installed, of another kind, or abstract (Cast: Cast$Key/Cast$Value)
    "unknown-transform": {"transforms": "x", "transforms.x.type": "com.example.Nope"},
    "unknown-predicate": {**_predicate("Nope"), **{"predicates.p.type": "com.example.P"}},
    "unknown-converter": {"value.converter": "com.example.Nope"},
    "converter-as-transform": {
        "transforms": "x",
        "transforms.x.type": "org.apache.kafka.connect.json.JsonConverter",
    },
    "transform-as-predicate": {**_predicate("Nope"), **{"predicates.p.type": T + "Flatten$Value"}},
    "transform-as-converter": {"value.converter": T + "Flatten$Value"},
    "abstract-transform": {"transforms": "x", "transforms.x.type": T + "Cast"},
    # a case-sensitive choice (ValidString), unlike most of Kafka's
    "reload-upper-case": {"config.action.reload": "NONE"},
    "reload-unknown": {"config.action.reload": "sometimes"},
    # Kafka's own words, odd as they are
    "cast-unknown-type": _transform("Cast$Value", spec="a: Foo "),
    "cast-three-parts": _transform("Cast$Value", spec="a:b:c"),
    # Java's PatternSyntaxException messages
    "regex-router-unclosed-group": _transform("RegexRouter", regex="a(b", replacement="x"),
    "regex-router-unmatched-paren": _transform("RegexRouter", regex="ab)", replacement="x"),
    "regex-router-dangling": _transform("RegexRouter", regex="a**", replacement="x"),
    "topic-matches-unclosed-class": _predicate("TopicNameMatches", pattern="ab[c"),
    "mask-empty-fields": _transform("MaskField$Value", fields=""),
    "drop-headers-empty": _transform("DropHeaders", headers=""),
    # a converter's keys are validated on their own: short keys throughout, and Kafka lists
    # a case-insensitive choice upper-cased in its HashSet's order
    "json-bad-decimal-format": {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.decimal.format": "HEX",
    },
    "json-bad-cache-size": {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.cache.size": "x",
    },
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_config_is_refused_as_kafkas_is(
    copycat: Peer, kafka_connect: Peer, case: str
) -> None:
    config = {**BASE, **CASES[case]}
    theirs = validation_errors(kafka_connect, PLUGIN, config)
    assert theirs["error_count"] > 1, theirs  # "name" is missing, and the case's own error
    assert validation_errors(copycat, PLUGIN, config) == theirs

    name = f"validate-{case}-{uuid.uuid4().hex[:6]}"
    their_refusal = create_refusal(kafka_connect, name, {**config, "name": name})
    assert their_refusal[0] == 400
    assert create_refusal(copycat, name, {**config, "name": name}) == their_refusal
    assert create_refusal(copycat, name, config, put=True) == their_refusal
    assert create_refusal(kafka_connect, name, config, put=True) == their_refusal


@pytest.mark.parametrize("batch_size", ["0", "-1"])
def test_a_file_source_batch_size_below_one_is_accepted_as_kafkas_is(
    copycat: Peer, kafka_connect: Peer, batch_size: str
) -> None:
    """Kafka's FileStreamSource batch.size has no validator: 0 and -1 are valid (its task
    then returns a line per poll); only the missing name is an error."""
    config = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "topic": "validate-topic",
        "file": "/dev/null",
        "batch.size": batch_size,
    }
    theirs = validation_errors(kafka_connect, "FileStreamSourceConnector", config)
    assert set(theirs) == {"error_count", "name"}, theirs
    assert validation_errors(copycat, "FileStreamSourceConnector", config) == theirs


NULL_REFUSED = {
    "tasks.max": ["Invalid value null for configuration tasks.max: Value must be non-null"],
    "transforms": ["Invalid value null for configuration transforms: entry must be non null"],
    "errors.tolerance": [
        "Invalid value null for configuration errors.tolerance: String must be one of: none, all"
    ],
    "unknown.key": [],
}


def _null_answers(peer: Peer, key: str) -> dict[str, Any]:
    """A config with ``key`` a JSON null: validate's entry for the key (whether it has a
    definition), POST's and PUT's refusal, and a refused PUT over an existing connector."""
    name = f"validate-null-{uuid.uuid4().hex[:6]}"
    config = {**BASE, "name": name, key: None}
    with peer.client() as client:
        body = client.put(f"/connector-plugins/{PLUGIN}/config/validate", json=config).json()
        entry = next(c for c in body["configs"] if c["value"]["name"] == key)
        seen: dict[str, Any] = {
            "error_count": body["error_count"],
            "errors": entry["value"]["errors"],
            "defined": entry["definition"] is not None,
        }
        seen["POST"] = create_refusal(peer, name, config)
        seen["PUT"] = create_refusal(peer, name, config, put=True)
        create(client, name, {**BASE, "name": name})
        try:
            response = client.put(f"/connectors/{name}/config", json=config)
            seen["PUT over existing"] = response.status_code
            seen["config after"] = client.get(f"/connectors/{name}/config").json()
        finally:
            delete(client, name)
    seen["config after"].pop("name")
    return seen


@pytest.mark.parametrize("key", list(NULL_REFUSED))
def test_a_null_value_of_a_framework_or_unknown_key_is_refused_as_kafkas_is(
    copycat: Peer, kafka_connect: Peer, key: str
) -> None:
    """Kafka 4.1 validates a JSON null value as null (the key's validator) and adds an error of
    its own on the key; create and config PUT answer 400 and change nothing. Copycat dropped
    the key and accepted the config."""
    errors = [*NULL_REFUSED[key], "Null value can not be supplied as the configuration value."]
    message = (
        f"Connector configuration is invalid and contains the following {len(errors)} "
        "error(s):\n" + "".join(f"{e}\n" for e in errors) + "You can also find the above list "
        "of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
    )
    ours = _null_answers(copycat, key)
    theirs = _null_answers(kafka_connect, key)
    assert (
        ours
        == theirs
        == {
            "error_count": len(errors),
            "errors": errors,
            "defined": key != "unknown.key",
            "POST": (400, message),
            "PUT": (400, message),
            "PUT over existing": 400,
            "config after": BASE,
        }
    )
