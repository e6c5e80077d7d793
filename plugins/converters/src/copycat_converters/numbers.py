"""The number and boolean converters: Kafka's fixed-width primitive serializers as converters.

Byte formats (identical to Kafka's ``ShortSerializer`` ... ``DoubleSerializer`` and
``BooleanSerializer``):

=================  ==================  ===========================================
Converter          Schema on read      Bytes
=================  ==================  ===========================================
ShortConverter     OPTIONAL_INT16      2-byte big-endian two's complement
IntegerConverter   OPTIONAL_INT32      4-byte big-endian two's complement
LongConverter      OPTIONAL_INT64      8-byte big-endian two's complement
FloatConverter     OPTIONAL_FLOAT32    IEEE 754 single, big-endian (raw bits)
DoubleConverter    OPTIONAL_FLOAT64    IEEE 754 double, big-endian (raw bits)
BooleanConverter   OPTIONAL_BOOLEAN    one byte, 0x00 false / 0x01 true
=================  ==================  ===========================================

``None`` maps to ``None`` (a tombstone) both ways. BooleanConverter rejects non-BOOLEAN
schemas. A number converter refuses a value whose schema has another number type
(INT8 ... FLOAT64), as Kafka's does: that schema's value is a Java ``Integer``, say, which
``LongSerializer``'s cast refuses. A value with no schema (or a non-number one) has no
such type: Python has no boxed-type distinction, so an ``int`` is taken by every number
converter, within the type's range, and by the float converters too; ``bool`` by none.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from copycat_converters._base import VersionedPlugin, converter_config_def, with_type
from plugin_api import (
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    AbstractConfig,
    ConfigDef,
    Converter,
    DataException,
    HeaderConverter,
    Headers,
    Schema,
    SchemaAndValue,
    Type,
    java_class_name,
)

__all__ = [
    "BooleanConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "LongConverter",
    "ShortConverter",
]

_KAFKA_PACKAGE = "org.apache.kafka.connect.converters."

# A value whose schema has one of these types is the Java Short ... Double it says: only
# the converter of that type can serialize it in Kafka (its serializer's cast refuses others).
_NUMBER_TYPES = frozenset(
    {Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64}
)

# Kafka's NumberConverterConfig and BooleanConverterConfig hold only converter.type.
_CONFIG_DEF = converter_config_def()


class _NumberConverter(VersionedPlugin, Converter, HeaderConverter):
    """Shared body: a ``struct`` format plus the schema returned on read."""

    to_connect_data_reads_headers = False  # plugin_api 0.1.5

    TYPE_NAME: str
    TYPE: Type
    SCHEMA: Schema
    _FORMAT: struct.Struct
    _INTEGRAL: bool

    def config(self) -> ConfigDef:
        """Return ``converter.type`` only."""
        return _CONFIG_DEF

    def configure(self, configs: Mapping[str, object], is_key: bool | None = None) -> None:
        """Validate ``converter.type``; ``is_key=None`` means header converter."""
        AbstractConfig(_CONFIG_DEF, with_type(configs, is_key))

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        """Return the fixed-width big-endian encoding of ``value`` (``None`` for ``None``).

        Raises:
            DataException: If ``value`` is not a number of this converter's kind, its
                schema has another number type, or it is out of range.
        """
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(
            value, int if self._INTEGRAL else (int, float)
        ):
            raise self._refused(value, schema, "expects a number")
        if schema is not None and schema.type in _NUMBER_TYPES and schema.type is not self.TYPE:
            raise self._refused(
                value, schema, f"takes {self.TYPE.name} values, the schema is {schema.type.name}"
            )
        try:
            return self._FORMAT.pack(value)
        except (struct.error, OverflowError) as exc:
            raise DataException(
                f"Failed to serialize to {self.TYPE_NAME}: {value!r} is out of range"
            ) from exc

    def _refused(self, value: object, schema: Schema | None, why: str) -> DataException:
        """Kafka's words for a value its serializer's cast refuses, then ours."""
        return DataException(
            f"Failed to serialize to {self.TYPE_NAME} "
            f"(was class {java_class_name(value, schema)}): {type(self).__name__} {why}"
        )

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        """Return ``(SCHEMA, value)``; ``None`` data gives a ``None`` value.

        Raises:
            DataException: If ``data`` has the wrong length for the type.
        """
        if data is None:
            return SchemaAndValue(self.SCHEMA, None)
        if len(data) != self._FORMAT.size:
            raise DataException(
                f"Failed to deserialize {self.TYPE_NAME}: size of data received is not "
                f"{self._FORMAT.size} (got {len(data)} bytes)"
            )
        return SchemaAndValue(self.SCHEMA, self._FORMAT.unpack(data)[0])

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: object
    ) -> bytes | None:
        """Same as :meth:`from_connect_data`."""
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """Same as :meth:`to_connect_data`."""
        return self.to_connect_data(topic, data)


class ShortConverter(_NumberConverter):
    """INT16 as 2 big-endian bytes (Kafka's ``ShortSerializer``)."""

    KAFKA_CLASS_ALIASES = (_KAFKA_PACKAGE + "ShortConverter",)
    TYPE_NAME = "short"
    TYPE = Type.INT16
    SCHEMA = OPTIONAL_INT16_SCHEMA
    _FORMAT = struct.Struct(">h")
    _INTEGRAL = True


class IntegerConverter(_NumberConverter):
    """INT32 as 4 big-endian bytes (Kafka's ``IntegerSerializer``)."""

    KAFKA_CLASS_ALIASES = (_KAFKA_PACKAGE + "IntegerConverter",)
    TYPE_NAME = "integer"
    TYPE = Type.INT32
    SCHEMA = OPTIONAL_INT32_SCHEMA
    _FORMAT = struct.Struct(">i")
    _INTEGRAL = True


class LongConverter(_NumberConverter):
    """INT64 as 8 big-endian bytes (Kafka's ``LongSerializer``)."""

    KAFKA_CLASS_ALIASES = (_KAFKA_PACKAGE + "LongConverter",)
    TYPE_NAME = "long"
    TYPE = Type.INT64
    SCHEMA = OPTIONAL_INT64_SCHEMA
    _FORMAT = struct.Struct(">q")
    _INTEGRAL = True


class FloatConverter(_NumberConverter):
    """FLOAT32 as the 4 big-endian bytes of the IEEE 754 single (Kafka's ``FloatSerializer``).

    Values are rounded to single precision on write; reads return that value as a
    Python float.
    """

    KAFKA_CLASS_ALIASES = (_KAFKA_PACKAGE + "FloatConverter",)
    TYPE_NAME = "float"
    TYPE = Type.FLOAT32
    SCHEMA = OPTIONAL_FLOAT32_SCHEMA
    _FORMAT = struct.Struct(">f")
    _INTEGRAL = False


class DoubleConverter(_NumberConverter):
    """FLOAT64 as the 8 big-endian bytes of the IEEE 754 double (Kafka's ``DoubleSerializer``)."""

    KAFKA_CLASS_ALIASES = (_KAFKA_PACKAGE + "DoubleConverter",)
    TYPE_NAME = "double"
    TYPE = Type.FLOAT64
    SCHEMA = OPTIONAL_FLOAT64_SCHEMA
    _FORMAT = struct.Struct(">d")
    _INTEGRAL = False


class BooleanConverter(VersionedPlugin, Converter, HeaderConverter):
    """BOOLEAN as one byte, 0x01 for true and 0x00 for false (Kafka's ``BooleanSerializer``)."""

    to_connect_data_reads_headers = False  # plugin_api 0.1.5
    KAFKA_CLASS_ALIASES = (_KAFKA_PACKAGE + "BooleanConverter",)
    _TRUE = b"\x01"
    _FALSE = b"\x00"

    def config(self) -> ConfigDef:
        """Return ``converter.type`` only."""
        return _CONFIG_DEF

    def configure(self, configs: Mapping[str, object], is_key: bool | None = None) -> None:
        """Validate ``converter.type``; ``is_key=None`` means header converter."""
        AbstractConfig(_CONFIG_DEF, with_type(configs, is_key))

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        """Return one byte for ``value`` (``None`` for ``None``).

        Raises:
            DataException: If the schema is not BOOLEAN or the value is not a bool.
        """
        if schema is not None and schema.type is not Type.BOOLEAN:
            raise DataException(f"Invalid schema type for BooleanConverter: {schema.type.name}")
        if value is None:
            return None
        if not isinstance(value, bool):
            raise DataException(
                f"BooleanConverter is not compatible with objects of type {type(value).__name__}"
            )
        return self._TRUE if value else self._FALSE

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        """Return ``(OPTIONAL_BOOLEAN_SCHEMA, value)``.

        Raises:
            DataException: If ``data`` is not exactly one byte of 0x00 or 0x01.
        """
        if data is None:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, None)
        if len(data) != 1:
            raise DataException(
                "Failed to deserialize boolean: size of data received by BooleanDeserializer "
                "is not 1 "
                f"(got {len(data)} bytes)"
            )
        if data[0] == 0:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, False)
        if data[0] == 1:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, True)
        raise DataException(
            "Failed to deserialize boolean: unexpected byte received by BooleanDeserializer: "
            f"{data[0]}"
        )

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: object
    ) -> bytes | None:
        """Same as :meth:`from_connect_data`."""
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """Same as :meth:`to_connect_data`."""
        return self.to_connect_data(topic, data)
