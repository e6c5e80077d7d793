"""AvroConverter: Confluent's Avro wire format with a Schema Registry.

Wire format (the same bytes as ``io.confluent.connect.avro.AvroConverter``)::

    byte 0      magic byte 0
    bytes 1-4   schema id, 4-byte big-endian, as assigned by the registry
    bytes 5-    the value in Avro binary encoding, written with that schema

Writing: the Connect schema is mapped to an Avro schema (see :mod:`copycat_avro._avrodata`),
registered (``auto.register.schemas=true``, the default) or looked up under the subject the
subject name strategy picks, and the id is cached. With ``use.latest.version=true`` and
auto-registration off, the subject's latest schema is used instead, fetched once and then
cached for ``latest.cache.ttl.sec`` seconds (-1, the default: for good; as Confluent's
serializers, which also bound the cache by ``latest.cache.size`` subjects). A registry refusal
raises the Kafka class Confluent's converter raises (see :func:`_refused`): a client error
(error code 4xx, e.g. 409: incompatible with the subject's compatibility level)
``ConfigException``, any other ``DataException``; both name the subject and the registry and
quote it.

Compiled writers and readers (per (topic, Connect schema) and (topic, schema id)) are kept in
caches of ``schemas.cache.config`` entries (Confluent's AvroData cache size, 1000 by default;
the oldest entry is dropped when one is full); with ``use.latest.version`` the latest
version's writer is compiled too, for as long as the latest-version cache holds that version.

Names and metadata (``connect.meta.data``, ``scrub.invalid.names``, as Confluent's
``AvroDataConfig``): see :mod:`copycat_avro._avrodata`. A schema whose names Avro refuses
fails its records with a ``DataException`` naming the topic, record and field; it is
converted (and so checked) once per schema, never per record. The other ``AvroDataConfig``
switches are defined so a setting other than their default is refused at
``config/validate`` rather than silently ignored.

Reading: the id selects the writer schema (fetched once per id); the Connect schema is
derived from it, with the registry version as the schema version when the Avro schema
carries no ``connect.version`` (as Confluent's converter does). The version is looked up
once per id under the subject the strategy computes; an id the registry says is not under
that subject (e.g. data written with RecordNameStrategy, read with the default
TopicNameStrategy) decodes with no version (Confluent's converter fails such a record,
"Error retrieving Avro value schema version for id N"), and that answer is cached like a
version, so neither costs a request per record nor needs the registry again. An id the registry does
not know fails the record with a ``DataException`` naming the topic and the id.

Credentials (``basic.auth.credentials.source``): ``URL`` (the default) takes them from the
user-info of ``schema.registry.url`` (``http://user:p%40ss@host:8081``, percent-decoded),
``USER_INFO`` from ``basic.auth.user.info``; Confluent's ``SASL_INHERIT`` is refused at
validation. A registry answering 401 or 403 fails the record (serializing or deserializing)
with a ``ConfigException`` (as Confluent's converter) naming the registry URL, the subject (or
schema id) and the status; it is not retried (the same credentials get the same answer) and
never read as "this id has no version" (only 40401/40403 are). It fails the task, or sends
the record to the dead letter queue with ``errors.tolerance=all``.
"""

from __future__ import annotations

import io
import json
import struct
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import fastavro

from copycat_avro._avrocompiled import compile_reader, compile_writer
from copycat_avro._avrodata import (
    from_connect_data,
    from_connect_schema,
    physical,
    schema_string,
    scrub_name,
    to_connect_data,
    to_connect_schema,
)
from copycat_avro._version import __version__
from copycat_avro.registry_client import (
    RegisteredSchema,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from copycat_avro.strategies import SubjectNameStrategy, resolve_strategy
from plugin_api import (
    NULL_SCHEMA_AND_VALUE,
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectException,
    Converter,
    DataException,
    Headers,
    Importance,
    Range,
    RetriableException,
    Schema,
    SchemaAndValue,
    ValidString,
)

__all__ = ["AvroConverter"]

MAGIC_BYTE = 0
_HEADER = struct.Struct(">bI")
_new_tuple = tuple.__new__


def _evict_oldest(cache: dict[Any, list[Any]]) -> None:
    """Drop the entry of ``cache`` compiled first (a dict keeps insertion order): on a miss of
    a full cache only, next to compiling the new entry. Not least-recently-used: that would
    cost every hit a stamp of use (measured, +40-45 ns a record), and with the cache as large
    as Confluent's (1000 schemas) only a task cycling through more schemas than that evicts
    at all, where LRU order would not keep them either."""
    del cache[next(iter(cache))]


SCHEMA_REGISTRY_URL_CONFIG = "schema.registry.url"
AUTO_REGISTER_SCHEMAS_CONFIG = "auto.register.schemas"
USE_LATEST_VERSION_CONFIG = "use.latest.version"
LATEST_CACHE_SIZE_CONFIG = "latest.cache.size"
LATEST_CACHE_TTL_CONFIG = "latest.cache.ttl.sec"
KEY_SUBJECT_NAME_STRATEGY_CONFIG = "key.subject.name.strategy"
VALUE_SUBJECT_NAME_STRATEGY_CONFIG = "value.subject.name.strategy"
BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG = "basic.auth.credentials.source"
BASIC_AUTH_USER_INFO_CONFIG = "basic.auth.user.info"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.config"
CONNECT_META_DATA_CONFIG = "connect.meta.data"
SCRUB_INVALID_NAMES_CONFIG = "scrub.invalid.names"
CONVERTER_TYPE_CONFIG = "converter.type"
TOPIC_NAME_STRATEGY = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
# Confluent's other AvroDataConfig switches, with their defaults: Copycat's AvroConverter
# behaves as the default, so another value is refused rather than ignored.
UNSUPPORTED_AVRO_DATA_CONFIGS = {
    "enhanced.avro.schema.support": (
        False,
        "Toggle for enabling/disabling enhanced avro schema support: Enum symbol preservation "
        "and Package Name awareness",
    ),
    "generalized.sum.type.support": (
        False,
        "Toggle for enabling/disabling generalized sum type support: interoperability of "
        "enum/union with other schema formats",
    ),
    "ignore.default.for.nullables": (
        False,
        "Whether to ignore the default for nullable fields when the value is null",
    ),
    "allow.optional.map.keys": (
        False,
        "Allow optional string map key when converting from Connect Schema to Avro Schema.",
    ),
    "discard.type.doc.default": (
        False,
        "Only Avro field doc and default will be retained during conversion of Avro "
        "and Connect schema.",
    ),
}


def _valid_strategy(name: str, value: Any) -> None:
    """A subject name strategy must be known when validated, not only when a task starts."""
    resolve_strategy(name, str(value) if value is not None else TOPIC_NAME_STRATEGY)


def _only(default: bool) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value != default:
            raise ConfigException(
                name,
                str(value).lower(),
                f"Copycat's AvroConverter does not support this setting; only "
                f"{str(default).lower()} (Confluent's default) is accepted",
            )

    return check


CONFIG_DEF = (
    ConfigDef()
    .define(
        SCHEMA_REGISTRY_URL_CONFIG,
        ConfigType.LIST,
        importance=Importance.HIGH,
        documentation=(
            "Comma-separated list of URLs for Schema Registry instances that can be used "
            "to register or look up schemas."
        ),
    )
    .define(
        AUTO_REGISTER_SCHEMAS_CONFIG,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "Specify if the Serializer should attempt to register the Schema with Schema Registry",
    )
    .define(
        USE_LATEST_VERSION_CONFIG,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Specify if the Serializer should use the latest subject version for serialization",
    )
    .define(
        LATEST_CACHE_SIZE_CONFIG,
        ConfigType.INT,
        1000,
        None,
        Importance.LOW,
        "The maximum size for caches holding latest schemas",
    )
    .define(
        LATEST_CACHE_TTL_CONFIG,
        ConfigType.INT,
        -1,
        None,
        Importance.LOW,
        "The TTL for caches holding latest schemas, or -1 for no TTL",
    )
    .define(
        KEY_SUBJECT_NAME_STRATEGY_CONFIG,
        ConfigType.STRING,
        TOPIC_NAME_STRATEGY,
        _valid_strategy,
        Importance.MEDIUM,
        "Determines how to construct the subject name under which the key schema is registered "
        "with the schema registry.",
    )
    .define(
        VALUE_SUBJECT_NAME_STRATEGY_CONFIG,
        ConfigType.STRING,
        TOPIC_NAME_STRATEGY,
        _valid_strategy,
        Importance.MEDIUM,
        "Determines how to construct the subject name under which the value schema is registered "
        "with the schema registry.",
    )
    .define(
        BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG,
        ConfigType.STRING,
        "URL",
        ValidString.in_("URL", "USER_INFO"),
        Importance.MEDIUM,
        "Specify how to pick the credentials for Basic Auth header. The supported values are URL "
        "and USER_INFO",
    )
    .define(
        BASIC_AUTH_USER_INFO_CONFIG,
        ConfigType.PASSWORD,
        "",
        None,
        Importance.MEDIUM,
        "Specify the user info for Basic Auth in the form of {username}:{password}",
    )
    .define(
        SCHEMAS_CACHE_SIZE_CONFIG,
        ConfigType.INT,
        1000,
        Range.at_least(0),
        Importance.LOW,
        "Size of the converted schemas cache",
    )
    .define(
        CONNECT_META_DATA_CONFIG,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Toggle for enabling/disabling connect converter to add its meta data to the output "
        "schema or not",
    )
    .define(
        SCRUB_INVALID_NAMES_CONFIG,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Whether to scrub invalid names by replacing invalid characters with valid ones",
    )
)
for _key, (_default, _doc) in UNSUPPORTED_AVRO_DATA_CONFIGS.items():
    CONFIG_DEF.define(_key, ConfigType.BOOLEAN, _default, _only(_default), Importance.LOW, _doc)


def _refused(
    topic: str, exc: SchemaRegistryError, data_message: str, context: str = ""
) -> ConnectException:
    """The error a registry refusal fails the record with, of the Kafka class Confluent's
    converter gives it (the dead letter queue's ``exception.class.name``): a client error
    (error code 4xx: 401/403, 409 incompatible schema ...) is an
    ``InvalidConfigurationException`` to Confluent's serializers, which its converter turns
    into a ``ConfigException`` ("Failed to access Avro data from topic ..."); any other
    refusal (40401/40403 not found, 42201 invalid schema ...) a ``SerializationException``,
    which becomes a ``DataException``. The registry's own answer (URL, subject, status) is
    kept in the message."""
    code = exc.error_code if isinstance(exc.error_code, int) else exc.status
    if code // 100 == 4:
        return ConfigException(f"Failed to access Avro data from topic {topic!r} : {context}{exc}")
    return DataException(f"{data_message}{context}{exc}")


class _Expired(Exception):
    """Take the exact path: a compiled writer of a cached latest version whose
    ``latest.cache.ttl.sec`` ran out, or a schema with no compiled reader."""


def _until(deadline: float, encode: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """``encode`` until ``deadline`` (monotonic); after it, it raises and the record takes
    the exact path, which fetches the latest version again."""

    def write(value: Any, _now: Callable[[], float] = time.monotonic) -> bytes:
        if _now() >= deadline:
            raise _Expired
        return encode(value)

    return write


def _not_compiled(data: bytes, start: int) -> Any:
    """The reader of a schema the compiler does not take: the exact path reads it."""
    raise _Expired


class _LRU:
    __slots__ = ("_data", "_capacity")

    def __init__(self, capacity: int) -> None:
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._capacity = capacity

    def get(self, key: Any) -> Any:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> Any:
        if self._capacity > 0:
            self._data[key] = value
            if len(self._data) > self._capacity:
                self._data.popitem(last=False)
        return value


class _WriterSchema:
    """One Connect schema's Avro form: its text for the registry, parsed for fastavro."""

    __slots__ = ("avro", "text", "parsed")

    def __init__(self, avro: Any) -> None:
        self.avro = avro
        self.text = schema_string(avro)
        self.parsed = fastavro.parse_schema(physical(avro))


class AvroConverter(Converter):
    """Kafka Connect converter for Confluent's Avro format (see module docstring)."""

    # Reading takes the bytes and the registry only: a batch's headers may stay unread until
    # its records are (plugin_api 0.1.5; copycat-avro 0.1.1).
    to_connect_data_reads_headers = False
    KAFKA_CLASS_ALIASES = ("io.confluent.connect.avro.AvroConverter",)
    CONFIG_DEF = CONFIG_DEF

    def __init__(self, client: SchemaRegistryClient | None = None) -> None:
        """Create an unconfigured converter; tests may inject a registry ``client``."""
        self._client = client
        self._owns_client = client is None
        self._is_key = False
        self._auto_register = True
        self._use_latest = False
        self._latest_ttl_s = -1.0
        self._latest_size = 1000
        self._strategy: SubjectNameStrategy | None = None
        self._connect_meta_data = True
        self._scrub = False
        self._writers = _LRU(1000)
        self._readers = _LRU(1000)
        self._compiled_size = 1000
        self._reset_compiled()

    def _reset_compiled(self) -> None:
        # The compiled writers and readers: caches of schemas.cache.config entries each
        # (Confluent's AvroData caches that many schemas). A hit is a dict look-up; a full
        # cache drops its oldest entry, alone, to make room for a new one (_evict_oldest).
        # (topic, schema) -> [wire header, compiled writer or None: not compiled];
        # the last one used by identity
        self._fast_writers: dict[tuple[str, Schema], list[Any]] = {}
        # use.latest.version: subject -> the (topic, schema) writers compiled for its cached
        # latest version, dropped with it (a newer latest version must take effect then)
        self._latest_writers: dict[str, set[tuple[str, Schema]]] = {}
        self._last_write: tuple[object, object, bytes, Callable[[Any], bytes] | None] = (
            None,
            None,
            b"",
            None,
        )
        # (topic, schema id) -> [Connect schema, compiled reader]
        self._fast_readers: dict[tuple[str, int], list[Any]] = {}
        # subject -> (monotonic time fetched, latest version) for use.latest.version
        self._latest: OrderedDict[str, tuple[float, RegisteredSchema]] = OrderedDict()

    def version(self) -> str:
        """The copycat-avro version."""
        return __version__

    def config(self) -> ConfigDef:
        """Return the converter's settings."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object], is_key: bool) -> None:
        """Read the settings and connect the registry client.

        Raises:
            ConfigException: If ``schema.registry.url`` is missing, a strategy is unknown,
                or ``basic.auth.user.info`` is not ``user:password``.
        """
        conf = AbstractConfig(
            CONFIG_DEF, {k: v for k, v in configs.items() if k != CONVERTER_TYPE_CONFIG}
        )
        self._is_key = is_key
        self._auto_register = bool(conf.get_boolean(AUTO_REGISTER_SCHEMAS_CONFIG))
        self._use_latest = bool(conf.get_boolean(USE_LATEST_VERSION_CONFIG))
        self._latest_size = int(conf.get_int(LATEST_CACHE_SIZE_CONFIG) or 0)
        self._latest_ttl_s = float(conf.get_int(LATEST_CACHE_TTL_CONFIG) or 0)
        self._connect_meta_data = bool(conf.get_boolean(CONNECT_META_DATA_CONFIG))
        self._scrub = bool(conf.get_boolean(SCRUB_INVALID_NAMES_CONFIG))
        strategy_key = (
            KEY_SUBJECT_NAME_STRATEGY_CONFIG if is_key else VALUE_SUBJECT_NAME_STRATEGY_CONFIG
        )
        self._strategy = resolve_strategy(
            strategy_key, conf.get_string(strategy_key) or TOPIC_NAME_STRATEGY
        )
        size = conf.get_int(SCHEMAS_CACHE_SIZE_CONFIG) or 0
        self._writers, self._readers = _LRU(size), _LRU(size)
        self._compiled_size = size
        self._reset_compiled()
        if self._client is None:
            urls = [str(u) for u in conf.get_list(SCHEMA_REGISTRY_URL_CONFIG) or []]
            if not urls:
                raise ConfigException(
                    SCHEMA_REGISTRY_URL_CONFIG,
                    urls,
                    "AvroConverter needs at least one schema registry URL",
                )
            self._client = SchemaRegistryClient(urls, auth=self._auth(conf))

    @staticmethod
    def _auth(conf: AbstractConfig) -> tuple[str, str] | None:
        if conf.get_string(BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG) != "USER_INFO":
            return None
        secret = conf.get_password(BASIC_AUTH_USER_INFO_CONFIG)
        info = secret.value if secret is not None else ""
        user, sep, password = info.partition(":")
        if not sep:
            raise ConfigException(
                BASIC_AUTH_USER_INFO_CONFIG,
                "[hidden]",
                "expected {username}:{password} for USER_INFO",
            )
        return user, password

    def close(self) -> None:
        """Close the registry client if this converter created it."""
        if self._owns_client and self._client is not None:
            self._client.close()

    # -- Connect -> bytes ------------------------------------------------------------------

    def _writer(self, topic: str, schema: Schema) -> _WriterSchema:
        """The schema's Avro form, converted (and its names checked) once per schema.

        Raises:
            DataException: If Avro cannot represent the schema (naming topic, record, field).
        """
        cached: _WriterSchema | None = self._writers.get(schema)
        if cached is None:
            try:
                avro = from_connect_schema(
                    schema,
                    connect_meta_data=self._connect_meta_data,
                    scrub_invalid_names=self._scrub,
                )
            except DataException as exc:
                raise DataException(
                    f"Failed to convert the {'key' if self._is_key else 'value'} schema for "
                    f"topic {topic!r} to Avro: {exc}"
                ) from exc
            cached = self._writers.put(schema, _WriterSchema(avro))
        return cached

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        """Serialize ``value`` in the Confluent wire format; ``None`` becomes ``None``.

        Raises:
            DataException: If the value does not fit the schema, there is no schema, or the
                registry refuses the schema (naming subject and the registry's reason).
            RetriableException: If the registry cannot be reached.
        """
        if value is None:
            return None
        last = self._last_write
        if last[1] is not schema or last[0] != topic:
            last = self._fast_writer(topic, schema)
        encode = last[3]
        if encode is not None:
            try:
                return encode(value)  # the header included
            except Exception:  # noqa: BLE001 - Fallback or anything odd: the exact path
                pass
        return self._from_connect_exact(topic, schema, value)

    def _fast_writer(
        self, topic: str, schema: Schema | None
    ) -> tuple[object, object, bytes, Callable[[Any], bytes] | None]:
        """The compiled writer remembered for ``(topic, schema)``, if any."""
        found = self._fast_writers.get((topic, schema)) if schema is not None else None
        if found is not None:
            last = (topic, schema, found[0], found[1])
        else:
            last = (topic, schema, b"", None)
        self._last_write = last
        return last

    def _from_connect_exact(self, topic: str, schema: Schema | None, value: object) -> bytes | None:
        """The straightforward path: the datum for fastavro, which writes it. Remembers a
        compiled writer for the (topic, schema) once the schema id is known for good."""
        if value is None:
            return None
        if schema is None:
            raise DataException(
                f"AvroConverter needs a schema to serialize data for topic {topic!r}; got a "
                f"{type(value).__name__} without one"
            )
        assert self._client is not None and self._strategy is not None, "configure() was not called"
        writer = self._writer(topic, schema)
        subject = self._strategy.subject_name(topic, self._is_key, writer.avro)
        parsed, avro, fetched = writer.parsed, writer.avro, None
        try:
            if self._auto_register:
                schema_id = self._client.register(subject, writer.text)
            elif self._use_latest:
                fetched, latest = self._latest_version(subject)
                schema_id = latest.id
                parsed, avro = self._reader(schema_id, latest.schema)
            else:
                schema_id = self._client.lookup_id(subject, writer.text)
        except SchemaRegistryError as exc:
            raise _refused(
                topic, exc, f"Failed to serialize Avro data from topic {topic!r}: "
            ) from exc
        datum = from_connect_data(schema, value, self._scrub)
        out = io.BytesIO()
        out.write(_HEADER.pack(MAGIC_BYTE, schema_id))
        try:
            fastavro.schemaless_writer(out, parsed, datum)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise DataException(
                f"Failed to serialize Avro data for topic {topic!r} (subject {subject!r}, "
                "schema id "
                f"{schema_id}): {exc}"
            ) from exc
        header = out.getvalue()[: _HEADER.size]
        if fetched is None:  # the id stays what it is now
            self._remember_writer(topic, schema, header, avro)
        elif subject in self._latest and self._latest_ttl_s != 0:
            # The latest version's id holds while the latest-version cache keeps it.
            self._remember_latest_writer(topic, schema, header, avro, subject, fetched)
        return out.getvalue()

    def _latest_version(self, subject: str) -> tuple[float, RegisteredSchema]:
        """The subject's latest version and when it was fetched (monotonic), cached as
        Confluent's serializers cache it: ``latest.cache.ttl.sec`` seconds after it was
        fetched (-1, the default: for good), at most ``latest.cache.size`` subjects (the
        least recently fetched go first). The writers compiled for a version leave with it."""
        assert self._client is not None
        cached = self._latest.get(subject)
        if cached is not None and (
            self._latest_ttl_s < 0 or time.monotonic() - cached[0] < self._latest_ttl_s
        ):
            return cached
        latest = self._client.latest(subject)
        fetched = (time.monotonic(), latest)
        self._forget_latest(subject)
        if self._latest_size > 0:
            self._latest[subject] = fetched
            while len(self._latest) > self._latest_size:
                self._forget_latest(next(iter(self._latest)))
        return fetched

    def _forget_latest(self, subject: str) -> None:
        """Drop ``subject``'s cached latest version and the writers compiled for it."""
        self._latest.pop(subject, None)
        keys = self._latest_writers.pop(subject, None)
        if keys:
            for key in keys:
                self._fast_writers.pop(key, None)
            self._last_write = (None, None, b"", None)

    def _remember_writer(self, topic: str, schema: Schema, header: bytes, avro: Any) -> bool:
        """Compile and keep the writer of ``(topic, schema)`` (True if it was not kept yet).
        A schema the compiler does not take is kept as such (no writer): its records take
        the exact path without trying to compile it again for each one."""
        writers, key = self._fast_writers, (topic, schema)
        if key in writers or self._compiled_size <= 0:
            return False
        encode = compile_writer(physical(avro), schema, header, scrub_name if self._scrub else None)
        if len(writers) >= self._compiled_size:
            _evict_oldest(writers)
        writers[key] = [header, encode]
        self._last_write = (None, None, b"", None)
        return True

    def _remember_latest_writer(
        self, topic: str, schema: Schema, header: bytes, avro: Any, subject: str, fetched: float
    ) -> None:
        """:meth:`_remember_writer` for ``use.latest.version``: the writer of the subject's
        cached latest version, dropped with it (:meth:`_forget_latest`: evicted, or fetched
        again). With a TTL it also stops at the TTL's end by itself: the record then takes
        the exact path, which fetches the latest version again."""
        if not self._remember_writer(topic, schema, header, avro):
            return
        self._latest_writers.setdefault(subject, set()).add((topic, schema))
        entry = self._fast_writers[(topic, schema)]
        if self._latest_ttl_s > 0 and entry[1] is not None:
            entry[1] = _until(fetched + self._latest_ttl_s, entry[1])

    # -- bytes -> Connect ------------------------------------------------------------------

    def _reader(self, schema_id: int, text: str | None = None) -> tuple[Any, Any]:
        cached = self._readers.get(schema_id)
        if cached is None:
            assert self._client is not None
            avro = json.loads(text if text is not None else self._client.schema_by_id(schema_id))
            parsed = fastavro.parse_schema(physical(avro))
            cached = self._readers.put(schema_id, (parsed, avro))
        return cached  # type: ignore[no-any-return]

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        """Deserialize Confluent wire-format bytes; ``None`` gives ``(None, None)``.

        Raises:
            DataException: On an unknown magic byte, an unknown schema id or corrupt data.
            RetriableException: If the registry cannot be reached.
        """
        if data is None:
            return NULL_SCHEMA_AND_VALUE
        if type(data) is bytes and len(data) > _HEADER.size and data[0] == MAGIC_BYTE:
            found = self._fast_readers.get((topic, int.from_bytes(data[1:5])))
            if found is not None:
                try:
                    return _new_tuple(SchemaAndValue, (found[0], found[1](data, _HEADER.size)))
                except Exception:  # noqa: BLE001 - Fallback, truncated data: the exact path
                    pass
        return self._to_connect_exact(topic, data)

    def to_connect_data_batch(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Headers | None]
    ) -> Sequence[tuple[Schema | None, object]]:
        """:meth:`to_connect_data` for a column of records, the compiled readers inline:
        while records start with the same header (magic byte and schema id) as the one
        before, its reader is taken without a look-up (a batch usually holds one schema)."""
        readers, convert, start = self._fast_readers, self.to_connect_data, _HEADER.size
        out: list[tuple[Schema | None, object]] = []
        append = out.append
        header, schema, read = b"", None, None
        for value, record_headers in zip(data, headers, strict=True):
            if read is not None and type(value) is bytes and value.startswith(header):
                try:
                    append((schema, read(value, start)))
                    continue
                except Exception:  # noqa: BLE001 - the exact path gives value or error
                    pass
            elif type(value) is bytes and len(value) > start and value[0] == MAGIC_BYTE:
                found = readers.get((topic, int.from_bytes(value[1:5])))
                if found is not None:
                    header, schema, read = value[:start], found[0], found[1]
                    try:
                        append((schema, read(value, start)))
                        continue
                    except Exception:  # noqa: BLE001 - the exact path gives value or error
                        pass
            append(convert(topic, value, record_headers))
            found = (
                readers.get((topic, int.from_bytes(value[1:5])))
                if type(value) is bytes and len(value) > start and value[0] == MAGIC_BYTE
                else None
            )
            if found is not None:  # the exact path compiled one: the next records use it
                header, schema, read = value[:start], found[0], found[1]
        return out

    def _to_connect_exact(self, topic: str, data: bytes) -> SchemaAndValue:
        """The straightforward path: fastavro reads a datum that becomes the Connect value.
        Remembers a compiled reader for (topic, schema id) once its version is known."""
        assert self._client is not None and self._strategy is not None, "configure() was not called"
        if len(data) < _HEADER.size:
            raise DataException(
                f"Failed to deserialize data for topic {topic!r} to Avro: too short "
                f"({len(data)} bytes)"
            )
        magic, schema_id = _HEADER.unpack_from(data)
        if magic != MAGIC_BYTE:
            raise DataException(
                f"Failed to deserialize data for topic {topic!r} to Avro: Unknown magic byte!"
            )
        try:
            parsed, avro = self._reader(schema_id)
        except RetriableException as exc:
            raise RetriableException(self._retrieving_failed(topic, "", schema_id, exc)) from exc
        except SchemaRegistryError as exc:
            raise self._refused_reading(topic, "", schema_id, exc) from exc
        except DataException as exc:
            raise DataException(self._retrieving_failed(topic, "", schema_id, exc)) from exc
        try:
            datum = fastavro.schemaless_reader(
                io.BytesIO(bytes(data[_HEADER.size :])),
                parsed,
                None,
                return_record_name=True,
                return_record_name_override=True,
            )
        except (EOFError, ValueError, IndexError, UnicodeDecodeError, struct.error) as exc:
            raise DataException(
                f"Failed to deserialize data for topic {topic!r} to Avro (schema id "
                f"{schema_id}): {exc}"
            ) from exc
        try:
            version = self._version(topic, schema_id, avro)
        except RetriableException as exc:
            raise RetriableException(
                self._retrieving_failed(topic, " version", schema_id, exc)
            ) from exc
        except SchemaRegistryError as exc:  # e.g. 401/403: the record fails, nothing cached
            raise self._refused_reading(topic, " version", schema_id, exc) from exc
        except DataException as exc:
            raise DataException(self._retrieving_failed(topic, " version", schema_id, exc)) from exc
        key = (schema_id, version)
        connect_schema: Schema | None = self._readers.get(key)
        if connect_schema is None:
            connect_schema = self._readers.put(key, to_connect_schema(avro, version))
        result = SchemaAndValue(connect_schema, to_connect_data(connect_schema, datum))
        # The version (or that the id has none under the subject) is known for good now.
        self._remember_reader(topic, schema_id, avro, connect_schema)  # type: ignore[arg-type]
        return result

    def _retrieving_failed(self, topic: str, what: str, schema_id: int, exc: Exception) -> str:
        """Confluent's wording (its DataException over the deserializer's error)."""
        return (
            f"Failed to deserialize data for topic {topic!r} to Avro: Error retrieving Avro "
            f"{'key' if self._is_key else 'value'} schema{what} for id {schema_id}: {exc}"
        )

    def _refused_reading(
        self, topic: str, what: str, schema_id: int, exc: SchemaRegistryError
    ) -> ConnectException:
        """A registry refusal while reading, as :func:`_refused` classes it."""
        return _refused(
            topic,
            exc,
            f"Failed to deserialize data for topic {topic!r} to Avro: ",
            f"Error retrieving Avro {'key' if self._is_key else 'value'} schema{what} for id "
            f"{schema_id}: ",
        )

    def _remember_reader(self, topic: str, schema_id: int, avro: Any, schema: Schema) -> None:
        readers, key = self._fast_readers, (topic, schema_id)
        if key in readers or self._compiled_size <= 0:
            return
        # Not compiled: kept as a reader that sends its records to the exact path, so the
        # compiler is not tried again for each record.
        read = compile_reader(physical(avro), schema) or _not_compiled
        if len(readers) >= self._compiled_size:
            _evict_oldest(readers)
        readers[key] = [schema, read]

    def _version(self, topic: str, schema_id: int, avro: Any) -> int | None:
        assert self._client is not None and self._strategy is not None
        try:
            subject = self._strategy.subject_name(topic, self._is_key, avro)
        except DataException:
            return None
        return self._client.version_of(subject, schema_id, self._client.schema_by_id(schema_id))
