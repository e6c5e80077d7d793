"""StringConverter and ByteArrayConverter: Kafka Connect's two trivial converters."""

from __future__ import annotations

import codecs
from collections.abc import Mapping, Sequence
from itertools import repeat

from copycat_converters._base import VersionedPlugin, converter_config_def, with_type
from plugin_api import (
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    Converter,
    DataException,
    HeaderConverter,
    Headers,
    Importance,
    Schema,
    SchemaAndValue,
    Type,
    Utf8Texts,
    Width,
    java_string,
)

__all__ = ["ByteArrayConverter", "StringConverter"]

ENCODING_CONFIG = "converter.encoding"
ENCODING_DEFAULT = "UTF-8"


def _check_encoding(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise ConfigException(name, value, "Expected the name of a character encoding")
    try:
        codecs.lookup(value)
    except LookupError:
        raise ConfigException(name, value, "Unknown character encoding") from None


# Shared by every null key/value a StringConverter reads (a tuple, so nothing can change it).
_NULL_STRING = SchemaAndValue(OPTIONAL_STRING_SCHEMA, None)
# SchemaAndValue's generated __new__ costs a Python call per record; the tuple constructor
# builds the same object.
_new_tuple = tuple.__new__


class StringConverter(VersionedPlugin, Converter, HeaderConverter):
    """Converts any value to text as Kafka's does (Java's ``toString()``: ``Struct{a=x}``,
    ``1.0E7``, ``false``, see :func:`plugin_api.java_string`) and text back to an optional
    string.

    Like Kafka's, characters the encoding cannot represent become ``?`` and
    undecodable bytes become U+FFFD rather than failing the record.
    """

    # Undecodable bytes become U+FFFD: every input has an answer (plugin_api 0.1.4), as a
    # header too; headers change nothing (0.1.5).
    to_connect_data_never_fails = True
    to_connect_header_never_fails = True
    to_connect_data_reads_headers = False
    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.storage.StringConverter",)

    CONFIG_DEF = converter_config_def().define(
        ENCODING_CONFIG,
        ConfigType.STRING,
        ENCODING_DEFAULT,
        _check_encoding,
        Importance.HIGH,
        "The name of the character set to use for encoding strings as byte arrays.",
        width=Width.MEDIUM,
        display_name="Encoding",
    )

    def __init__(self) -> None:
        """Create an unconfigured converter (UTF-8 until configured)."""
        self._encoding = "utf-8"
        self._utf8 = True

    def config(self) -> ConfigDef:
        """Return ``converter.encoding`` and ``converter.type``."""
        return self.CONFIG_DEF

    def configure(self, configs: Mapping[str, object], is_key: bool | None = None) -> None:
        """Read ``converter.encoding``; ``is_key=None`` means header converter.

        Raises:
            ConfigException: If the encoding is unknown (naming ``converter.encoding``).
        """
        conf = AbstractConfig(self.CONFIG_DEF, with_type(configs, is_key))
        self._encoding = codecs.lookup(conf.get_string(ENCODING_CONFIG) or ENCODING_DEFAULT).name
        self._utf8 = self._encoding == "utf-8"

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        """The value's text encoded: a str as it is, ``bytes`` decoded first, anything else as
        Java's ``toString()`` prints it (:func:`plugin_api.java_string`); ``None`` for ``None``."""
        if type(value) is str:
            return value.encode(self._encoding, "replace")
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            text = bytes(value).decode(self._encoding, errors="replace")
        else:
            text = value if isinstance(value, str) else java_string(value, schema)
        return text.encode(self._encoding, errors="replace")

    def from_connect_data_batch(
        self,
        topic: str,
        schemas: Sequence[Schema | None],
        values: Sequence[object],
        headers: Sequence[Headers | None],
    ) -> Sequence[bytes | None]:
        """:meth:`from_connect_data` of each entry, encoded in one pass when all are ``str``
        (UTF-8), or all None (a source's keys, usually). :class:`~plugin_api.Utf8Texts` (a
        file's lines, say) are already their UTF-8 encoding: taken as they are."""
        if self._utf8:
            if type(values) is Utf8Texts:
                return values.encoded
            try:
                return list(map(str.encode, values))  # type: ignore[arg-type]
            except (TypeError, UnicodeEncodeError):
                pass  # not all str, or a lone surrogate ("replace" needed): see below
        if values.count(None) == len(values):
            return [None] * len(values)
        convert = self.from_connect_data
        return [
            convert(topic, schema, value, None)
            for schema, value in zip(schemas, values, strict=True)
        ]

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        """Return ``(OPTIONAL_STRING_SCHEMA, decoded text or None)``."""
        if type(data) is not bytes:
            if data is None:
                return _NULL_STRING
            data = bytes(data)
        if self._utf8:
            # Strict UTF-8 is CPython's fastest decode; only invalid input pays for "replace".
            try:
                text = data.decode()
            except UnicodeDecodeError:
                text = data.decode("utf-8", "replace")
        else:
            text = data.decode(self._encoding, "replace")
        return _new_tuple(SchemaAndValue, (OPTIONAL_STRING_SCHEMA, text))  # type: ignore[no-any-return]

    def to_connect_data_batch(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Headers | None]
    ) -> Sequence[tuple[Schema | None, object]]:
        """:meth:`to_connect_data` of each entry, as plain pairs, decoded in one pass when all
        are UTF-8 ``bytes`` (a quarter of the per-record cost)."""
        if self._utf8:
            try:
                return list(zip(repeat(OPTIONAL_STRING_SCHEMA), map(bytes.decode, data)))
            except (TypeError, UnicodeDecodeError):
                pass  # None, a bytearray or invalid UTF-8 somewhere: record by record
        convert = self.to_connect_data
        return [convert(topic, value, None) for value in data]

    def to_connect_data_column(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Headers | None]
    ) -> tuple[Schema | None, Sequence[object]] | None:
        """``(OPTIONAL_STRING_SCHEMA, the texts)`` when all entries are UTF-8 ``bytes``, as a
        :class:`~plugin_api.Utf8Texts` (checked in one pass, decoded only if read: a sink that
        writes UTF-8 takes the bytes); None otherwise (nulls, other encodings, invalid UTF-8:
        see :meth:`to_connect_data_batch`)."""
        if self._utf8:
            try:
                return OPTIONAL_STRING_SCHEMA, Utf8Texts(data)  # type: ignore[arg-type]
            except (TypeError, UnicodeDecodeError):
                pass
        return None

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: object
    ) -> bytes | None:
        """Same as :meth:`from_connect_data`."""
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """Same as :meth:`to_connect_data`."""
        return self.to_connect_data(topic, data)


class ByteArrayConverter(VersionedPlugin, Converter, HeaderConverter):
    """Passes bytes through unchanged; the schema must be BYTES (or absent)."""

    # bytes and None pass as they are, as headers too; headers change nothing.
    to_connect_data_never_fails = True
    to_connect_header_never_fails = True
    to_connect_data_reads_headers = False
    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.converters.ByteArrayConverter",)

    CONFIG_DEF = converter_config_def()

    def config(self) -> ConfigDef:
        """Return ``converter.type`` only."""
        return self.CONFIG_DEF

    def configure(self, configs: Mapping[str, object], is_key: bool | None = None) -> None:
        """Nothing to configure."""

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        """Return ``value`` as bytes.

        Raises:
            DataException: If the schema is not BYTES or the value is not bytes-like.
        """
        if schema is not None and schema.type is not Type.BYTES:
            raise DataException(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        if value is None or isinstance(value, bytes):
            return value
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        raise DataException(
            f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}"
        )

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        """Return ``(OPTIONAL_BYTES_SCHEMA, data)``."""
        return SchemaAndValue(OPTIONAL_BYTES_SCHEMA, data)

    def to_connect_data_batch(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Headers | None]
    ) -> Sequence[tuple[Schema | None, object]]:
        """:meth:`to_connect_data` of each entry, as plain pairs."""
        return list(zip(repeat(OPTIONAL_BYTES_SCHEMA), data))

    def to_connect_data_column(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Headers | None]
    ) -> tuple[Schema | None, Sequence[object]] | None:
        """``(OPTIONAL_BYTES_SCHEMA, the data as it is)``."""
        return OPTIONAL_BYTES_SCHEMA, list(data)

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: object
    ) -> bytes | None:
        """Same as :meth:`from_connect_data`."""
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """Same as :meth:`to_connect_data`."""
        return self.to_connect_data(topic, data)
