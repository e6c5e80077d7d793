"""AvroConverter against a dev Schema Registry that requires HTTP basic authentication.

The registry is ``copycat schema-registry --basic-auth``'s server (as Confluent's with
``authentication.method=BASIC``), on a ``_schemas`` topic of each test's own. Right
credentials work both ways (``basic.auth.credentials.source`` USER_INFO and URL); wrong or
missing ones fail the record with a ConfigException (as Confluent's converter: a registry
client error) naming the registry URL, the subject (or schema id) and the status, and are
never taken for "this id has no version".
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from copycat_avro import AvroConverter, SchemaRegistryClient, SchemaRegistryError

from core.dev.schema_registry import BasicAuth, SchemaRegistry
from plugin_api import (
    INT64_SCHEMA,
    ConfigException,
    RetriableException,
    SchemaBuilder,
    Struct,
)

pytestmark = pytest.mark.integration

# A password with the characters a URL's user-info must percent-encode.
PASSWORD = "p@ss:w/rd%"
URL_PASSWORD = "p%40ss%3Aw%2Frd%25"
USERS = {"alice": PASSWORD, "viewer": "pw"}
ROLES = {"alice": frozenset({"developer"}), "viewer": frozenset({"read-only"})}
SCHEMA = SchemaBuilder.struct().name("com.acme.Order").field("id", INT64_SCHEMA).build()


def _auth(users: dict[str, str]) -> BasicAuth:
    return BasicAuth(users, roles=ROLES, allowed_roles=frozenset({"developer"}))


@pytest.fixture
def registry(broker, topic_name: str) -> Iterator[SchemaRegistry]:  # noqa: ANN001
    with SchemaRegistry(
        broker.bootstrap_servers, topic=f"_schemas-{topic_name}", basic_auth=_auth(USERS)
    ) as reg:
        yield reg


def converter(url: str, **config: object) -> AvroConverter:
    conv = AvroConverter()
    conv.configure({"schema.registry.url": url, **config}, False)
    return conv


def user_info(user: str, password: str) -> dict[str, str]:
    return {
        "basic.auth.credentials.source": "USER_INFO",
        "basic.auth.user.info": f"{user}:{password}",
    }


def with_userinfo(url: str, userinfo: str) -> str:
    return url.replace("http://", f"http://{userinfo}@")


def order(n: int) -> Struct:
    return Struct(SCHEMA).put("id", n)


def test_right_credentials_register_and_read_back_user_info_and_url(
    registry: SchemaRegistry, topic_name: str
) -> None:
    writer = converter(registry.url, **user_info("alice", PASSWORD))
    data = writer.from_connect_data(topic_name, SCHEMA, order(1))
    assert data is not None and data[0] == 0
    schema_id = int.from_bytes(data[1:5], "big")
    latest = httpx.get(
        f"{registry.url}/subjects/{topic_name}-value/versions/latest", auth=("alice", PASSWORD)
    ).json()
    assert latest["id"] == schema_id and latest["version"] == 1

    # A fresh converter with the credentials in the URL (percent-encoded, the default source)
    # fetches the schema by id and looks its version up.
    reader = converter(with_userinfo(registry.url, f"alice:{URL_PASSWORD}"))
    read = reader.to_connect_data(topic_name, data)
    assert read.value.get("id") == 1 and read.schema is not None and read.schema.version == 1
    assert registry.requests[f"GET /schemas/ids/{schema_id}"] == 1
    assert registry.requests[f"POST /subjects/{topic_name}-value"] == 1
    # USER_INFO takes precedence over (wrong) user-info in the URL, as Confluent's.
    mixed = converter(with_userinfo(registry.url, "alice:wrong"), **user_info("alice", PASSWORD))
    assert mixed.from_connect_data(topic_name, SCHEMA, order(2))[:5] == data[:5]


@pytest.mark.parametrize(
    ("config", "status"),
    [
        ({}, 401),  # no credentials at all
        (user_info("alice", "wrong"), 401),
        (user_info("viewer", "pw"), 403),  # known, but without an allowed role
    ],
    ids=["missing", "wrong", "forbidden"],
)
def test_refused_credentials_fail_serializing_naming_url_subject_and_status(
    registry: SchemaRegistry, topic_name: str, config: dict[str, str], status: int
) -> None:
    conv = converter(registry.url, **config)
    for _ in range(2):  # not cached, not retried: each record asks once and fails
        with pytest.raises(ConfigException) as raised:
            conv.from_connect_data(topic_name, SCHEMA, order(1))
        assert not isinstance(raised.value, RetriableException)
        message = str(raised.value)
        assert f"Schema registry at {registry.url} " in message, message
        assert f"subject '{topic_name}-value'" in message and f"HTTP {status}" in message, message
        assert PASSWORD not in message
    assert registry.requests[f"POST /subjects/{topic_name}-value/versions"] == 2
    subjects = httpx.get(f"{registry.url}/subjects", auth=("alice", PASSWORD)).json()
    assert f"{topic_name}-value" not in subjects  # nothing registered

    lookup_only = converter(registry.url, **{"auto.register.schemas": "false", **config})
    with pytest.raises(ConfigException, match=f"HTTP {status}"):
        lookup_only.from_connect_data(topic_name, SCHEMA, order(1))


def test_refused_credentials_fail_deserializing_naming_url_id_and_status(
    registry: SchemaRegistry, topic_name: str
) -> None:
    data = converter(registry.url, **user_info("alice", PASSWORD)).from_connect_data(
        topic_name, SCHEMA, order(1)
    )
    assert data is not None
    schema_id = int.from_bytes(data[1:5], "big")
    conv = converter(registry.url, **user_info("alice", "wrong"))
    with pytest.raises(ConfigException) as raised:
        conv.to_connect_data(topic_name, data)
    message = str(raised.value)
    assert f"schema for id {schema_id}" in message and repr(topic_name) in message, message
    assert f"Schema registry at {registry.url} " in message and "HTTP 401" in message, message


def test_version_of_raises_on_401_and_403_and_caches_nothing(
    registry: SchemaRegistry, topic_name: str
) -> None:
    """Only 40401/40403 mean "no version" (Confluent's client raises for the others)."""
    subject = f"{topic_name}-value"
    text = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    good = SchemaRegistryClient([registry.url], auth=("alice", PASSWORD))
    schema_id = good.register(subject, text)
    for auth, status in ((("alice", "wrong"), 401), (("viewer", "pw"), 403), (None, 401)):
        client = SchemaRegistryClient([registry.url], auth=auth)
        for _ in range(2):
            with pytest.raises(SchemaRegistryError) as raised:
                client.version_of(subject, schema_id, text)
            assert raised.value.status == status and raised.value.subject == subject
        client.close()
    assert registry.requests[f"POST /subjects/{subject}"] == 6  # each call asked: no cache
    # "not registered" stays a cached "no version"
    fresh = SchemaRegistryClient([registry.url], auth=("alice", PASSWORD))
    assert fresh.version_of(subject, schema_id, text) == 1
    assert fresh.version_of(f"{topic_name}-other", schema_id, text) is None
    assert fresh.version_of(f"{topic_name}-other", schema_id, text) is None
    assert registry.requests[f"POST /subjects/{topic_name}-other"] == 1
    good.close()
    fresh.close()


def test_credentials_revoked_while_running_fail_the_record_not_its_version(
    broker,  # noqa: ANN001
    topic_name: str,
) -> None:
    """The reader has the schema of an id already (cached); the next topic's records with
    that id need its version under another subject, and the registry now refuses the
    converter's user: the record fails (the old client read the 401 as "no version", for
    good), and once the user is let in again the version is found."""
    schemas = f"_schemas-{topic_name}"
    other = f"{topic_name}-b"
    with SchemaRegistry(broker.bootstrap_servers, topic=schemas, basic_auth=_auth(USERS)) as reg:
        port = reg.port
        writer = converter(reg.url, **user_info("alice", PASSWORD))
        data = writer.from_connect_data(topic_name, SCHEMA, order(1))
        assert data is not None and writer.from_connect_data(other, SCHEMA, order(1)) == data
        reader = converter(reg.url, **user_info("alice", PASSWORD))
        assert reader.to_connect_data(topic_name, data).schema.version == 1  # type: ignore[union-attr]
    # The same registry (port, topic) without alice: her key was deleted.
    revoked = _auth({"viewer": "pw", "admin": "x"})
    with SchemaRegistry(
        broker.bootstrap_servers, port=port, topic=schemas, basic_auth=revoked
    ) as reg:
        for _ in range(2):
            with pytest.raises(ConfigException) as raised:
                reader.to_connect_data(other, data)
            message = str(raised.value)
            assert "schema version for id" in message and "HTTP 401" in message, message
            assert f"subject '{other}-value'" in message and reg.url in message, message
    with SchemaRegistry(
        broker.bootstrap_servers, port=port, topic=schemas, basic_auth=_auth(USERS)
    ):
        read = reader.to_connect_data(other, data)
        assert read.value.get("id") == 1
        assert read.schema is not None and read.schema.version == 1  # nothing cached from the 401
