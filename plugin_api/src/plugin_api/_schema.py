"""Schemas, fields, the schema builder and structs (re-exported by :mod:`plugin_api.data`)."""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from plugin_api.errors import DataException, SchemaBuilderException

# Logical type name -> accepted Python types. Filled by plugin_api._logical so that
# validate_value() can check logical values without importing that module here.
LOGICAL_VALUE_TYPES: dict[str, tuple[type, ...]] = {}

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


class Type(enum.Enum):
    """The physical type of a :class:`Schema`; the value is Kafka's lower-case name."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        """Whether the type is neither ARRAY, MAP nor STRUCT."""
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


@dataclass(frozen=True, slots=True)
class Field:
    """A named, positioned field of a STRUCT schema.

    Attributes:
        name: The field name.
        index: The position of the field in the struct.
        schema: The schema of the field's value.
    """

    name: str
    index: int
    schema: Schema


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _where(path: str | None) -> str:
    return f'field "{path}"' if path else "value"


_EXACT_TYPES: dict[Type, type] = {
    Type.STRING: str,
    Type.BOOLEAN: bool,
    Type.FLOAT32: float,
    Type.FLOAT64: float,
}


class Schema:
    """An immutable description of a value's type, compared and hashed by content.

    Build schemas with :class:`SchemaBuilder` or use the predefined constants such
    as ``Schema.STRING_SCHEMA``. MAP schemas have ``key_schema`` and
    ``value_schema``; ARRAY schemas have ``value_schema``; STRUCT schemas have
    ``fields``.
    """

    __slots__ = (
        "_type",
        "_optional",
        "_default_value",
        "_name",
        "_version",
        "_doc",
        "_parameters",
        "_key_schema",
        "_value_schema",
        "_fields",
        "_fields_by_name",
        "_hash",
        "_exact_type",
    )

    _type: Type
    _optional: bool
    _default_value: Any
    _name: str | None
    _version: int | None
    _doc: str | None
    _parameters: dict[str, str] | None
    _key_schema: Schema | None
    _value_schema: Schema | None
    _fields: tuple[Field, ...]
    _fields_by_name: dict[str, Field]
    _hash: int | None
    _exact_type: type | None

    # Predefined constants, assigned after the class body.
    INT8_SCHEMA: Schema
    INT16_SCHEMA: Schema
    INT32_SCHEMA: Schema
    INT64_SCHEMA: Schema
    FLOAT32_SCHEMA: Schema
    FLOAT64_SCHEMA: Schema
    BOOLEAN_SCHEMA: Schema
    STRING_SCHEMA: Schema
    BYTES_SCHEMA: Schema
    OPTIONAL_INT8_SCHEMA: Schema
    OPTIONAL_INT16_SCHEMA: Schema
    OPTIONAL_INT32_SCHEMA: Schema
    OPTIONAL_INT64_SCHEMA: Schema
    OPTIONAL_FLOAT32_SCHEMA: Schema
    OPTIONAL_FLOAT64_SCHEMA: Schema
    OPTIONAL_BOOLEAN_SCHEMA: Schema
    OPTIONAL_STRING_SCHEMA: Schema
    OPTIONAL_BYTES_SCHEMA: Schema

    def __init__(
        self,
        type: Type,
        optional: bool = False,
        default_value: object = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: list[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        """Create a schema; prefer :class:`SchemaBuilder`.

        Raises:
            SchemaBuilderException: If type-specific parts are missing or misplaced.
            DataException: If the default value does not match the schema.
        """
        if type is Type.MAP and (key_schema is None or value_schema is None):
            raise SchemaBuilderException("MAP schema requires key_schema and value_schema")
        if type is Type.ARRAY and value_schema is None:
            raise SchemaBuilderException("ARRAY schema requires value_schema")
        if type is not Type.MAP and key_schema is not None:
            raise SchemaBuilderException(f"key_schema is only valid for MAP, not {type.value}")
        if type not in (Type.MAP, Type.ARRAY) and value_schema is not None:
            raise SchemaBuilderException(
                f"value_schema is only valid for MAP/ARRAY, not {type.value}"
            )
        if type is not Type.STRUCT and fields:
            raise SchemaBuilderException(f"fields are only valid for STRUCT, not {type.value}")
        field_list = list(fields) if type is Type.STRUCT and fields else []
        setter = object.__setattr__
        setter(self, "_type", type)
        setter(self, "_optional", optional)
        setter(self, "_default_value", default_value)
        setter(self, "_name", name)
        setter(self, "_version", version)
        setter(self, "_doc", doc)
        setter(self, "_parameters", dict(parameters) if parameters is not None else None)
        setter(self, "_key_schema", key_schema)
        setter(self, "_value_schema", value_schema)
        setter(self, "_fields", tuple(field_list))
        setter(self, "_fields_by_name", {f.name: f for f in field_list})
        setter(self, "_hash", None)
        # A value of exactly this Python type needs no further checks (validate_value runs for
        # every Struct.put, i.e. per field per record on the hot path).
        setter(self, "_exact_type", None if name in LOGICAL_VALUE_TYPES else _EXACT_TYPES.get(type))
        if default_value is not None:
            self.validate_value(default_value, field_path=name)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("Schema is immutable")

    def __delattr__(self, key: str) -> None:
        raise AttributeError("Schema is immutable")

    @property
    def type(self) -> Type:
        """The physical type."""
        return self._type

    @property
    def optional(self) -> bool:
        """Whether ``None`` is a valid value."""
        return self._optional

    @property
    def default_value(self) -> Any:
        """The value used when none is set, or ``None``."""
        return self._default_value

    @property
    def name(self) -> str | None:
        """The schema name (logical type name for logical types)."""
        return self._name

    @property
    def version(self) -> int | None:
        """The schema version."""
        return self._version

    @property
    def doc(self) -> str | None:
        """Documentation for the schema."""
        return self._doc

    @property
    def parameters(self) -> dict[str, str] | None:
        """Schema parameters (a copy), e.g. ``{"scale": "2"}`` for Decimal."""
        params = self._parameters
        return dict(params) if params is not None else None

    @property
    def key_schema(self) -> Schema | None:
        """The key schema of a MAP schema."""
        return self._key_schema

    @property
    def value_schema(self) -> Schema | None:
        """The value schema of a MAP or the element schema of an ARRAY."""
        return self._value_schema

    @property
    def fields(self) -> list[Field]:
        """The fields of a STRUCT schema, in order (empty for other types)."""
        return list(self._fields)

    def field(self, name: str) -> Field | None:
        """Return the field called ``name``, or ``None``.

        Raises:
            DataException: If this is not a STRUCT schema.
        """
        if self._type is not Type.STRUCT:
            raise DataException(
                f"Cannot look up field {name!r} on non-struct {self._type.value} schema"
            )
        return self._fields_by_name.get(name)

    def _key(self) -> tuple[object, ...]:
        params = self._parameters
        return (
            self._type,
            self._optional,
            self._name,
            self._version,
            self._doc,
            tuple(sorted(params.items())) if params else None,
            self._key_schema,
            self._value_schema,
            self._fields,
        )

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        return self._key() == other._key() and self._default_value == other._default_value

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash(self._key())
            object.__setattr__(self, "_hash", cached)
        return cached

    def __repr__(self) -> str:
        parts = [self._type.value]
        if self._name:
            parts.append(f"name={self._name!r}")
        if self._optional:
            parts.append("optional")
        if self._version is not None:
            parts.append(f"version={self._version}")
        if self._default_value is not None:
            parts.append(f"default={self._default_value!r}")
        if self._parameters:
            parts.append(f"parameters={self._parameters!r}")
        if self._type is Type.MAP:
            parts.append(f"key={self._key_schema!r}, value={self._value_schema!r}")
        elif self._type is Type.ARRAY:
            parts.append(f"items={self._value_schema!r}")
        elif self._type is Type.STRUCT:
            inner = ", ".join(f"{f.name}: {f.schema!r}" for f in self._fields)
            parts.append(f"fields=[{inner}]")
        return f"Schema({', '.join(parts)})"

    def validate_value(self, value: object, field_path: str | None = None) -> None:
        """Check that ``value`` is valid for this schema.

        Args:
            value: The Python value.
            field_path: Dotted path of the value used in error messages.

        Raises:
            DataException: Naming the field path, the expected and the actual type.
        """
        if type(value) is self._exact_type:
            return
        if value is None:
            if self._optional or self._default_value is not None:
                return
            if field_path:
                raise DataException(
                    f'Missing required field "{field_path}": value is None but the '
                    f"{self._type.value} schema is not optional and has no default"
                )
            raise DataException(f"Invalid value: None used for required {self._type.value} schema")
        logical = LOGICAL_VALUE_TYPES.get(self._name) if self._name else None
        if logical is not None:
            if not isinstance(value, logical):
                expected = " or ".join(f"{t.__module__}.{t.__qualname__}" for t in logical)
                raise DataException(
                    f"Invalid value for {_where(field_path)}: logical type {self._name} "
                    f"expects {expected}, got {_describe(value)}"
                )
            return
        kind = self._type
        if kind.value in _INT_RANGES:
            if not isinstance(value, int) or isinstance(value, bool):
                raise self._mismatch(field_path, value)
            low, high = _INT_RANGES[kind.value]
            if not low <= value <= high:
                raise DataException(
                    f"Invalid value for {_where(field_path)}: {value} is out of range "
                    f"for {kind.value} [{low}, {high}]"
                )
        elif kind is Type.FLOAT32 or kind is Type.FLOAT64:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise self._mismatch(field_path, value)
        elif kind is Type.BOOLEAN:
            if not isinstance(value, bool):
                raise self._mismatch(field_path, value)
        elif kind is Type.STRING:
            if not isinstance(value, str):
                raise self._mismatch(field_path, value)
        elif kind is Type.BYTES:
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise self._mismatch(field_path, value)
        elif kind is Type.ARRAY:
            if not isinstance(value, (list, tuple)):
                raise self._mismatch(field_path, value)
            element = self._value_schema
            assert element is not None
            prefix = field_path or ""
            for i, item in enumerate(value):
                element.validate_value(item, f"{prefix}[{i}]")
        elif kind is Type.MAP:
            if not isinstance(value, Mapping):
                raise self._mismatch(field_path, value)
            prefix = field_path or ""
            key_schema, value_schema = self._key_schema, self._value_schema
            assert key_schema is not None and value_schema is not None
            for k, v in value.items():
                key_schema.validate_value(k, f"{prefix}<key {k!r}>")
                value_schema.validate_value(v, f"{prefix}[{k!r}]")
        elif kind is Type.STRUCT:
            if not isinstance(value, Struct):
                raise self._mismatch(field_path, value)
            other = value.schema
            # Compared structurally, ignoring optionality/default/doc: a struct built
            # for the required form of a schema is a valid value of its optional form.
            if other is not self and (
                other._fields != self._fields
                or other._name != self._name
                or other._version != self._version
            ):
                raise DataException(
                    f"Invalid value for {_where(field_path)}: struct schema {other!r} "
                    f"does not match {self!r}"
                )

    def _mismatch(self, field_path: str | None, value: object) -> DataException:
        return DataException(
            f"Invalid value for {_where(field_path)}: expected {self._type.value}, "
            f"got {_describe(value)}"
        )


def _primitive(kind: Type, optional: bool) -> Schema:
    return Schema(kind, optional=optional)


INT8_SCHEMA = _primitive(Type.INT8, False)
INT16_SCHEMA = _primitive(Type.INT16, False)
INT32_SCHEMA = _primitive(Type.INT32, False)
INT64_SCHEMA = _primitive(Type.INT64, False)
FLOAT32_SCHEMA = _primitive(Type.FLOAT32, False)
FLOAT64_SCHEMA = _primitive(Type.FLOAT64, False)
BOOLEAN_SCHEMA = _primitive(Type.BOOLEAN, False)
STRING_SCHEMA = _primitive(Type.STRING, False)
BYTES_SCHEMA = _primitive(Type.BYTES, False)
OPTIONAL_INT8_SCHEMA = _primitive(Type.INT8, True)
OPTIONAL_INT16_SCHEMA = _primitive(Type.INT16, True)
OPTIONAL_INT32_SCHEMA = _primitive(Type.INT32, True)
OPTIONAL_INT64_SCHEMA = _primitive(Type.INT64, True)
OPTIONAL_FLOAT32_SCHEMA = _primitive(Type.FLOAT32, True)
OPTIONAL_FLOAT64_SCHEMA = _primitive(Type.FLOAT64, True)
OPTIONAL_BOOLEAN_SCHEMA = _primitive(Type.BOOLEAN, True)
OPTIONAL_STRING_SCHEMA = _primitive(Type.STRING, True)
OPTIONAL_BYTES_SCHEMA = _primitive(Type.BYTES, True)

for _const_name, _const in list(globals().items()):
    if _const_name.endswith("_SCHEMA") and isinstance(_const, Schema):
        type.__setattr__(Schema, _const_name, _const)
del _const_name, _const


class SchemaAndValue(NamedTuple):
    """A value together with its (possibly absent) schema, as converters return it."""

    schema: Schema | None
    value: object


NULL_SCHEMA_AND_VALUE = SchemaAndValue(None, None)
SchemaAndValue.NULL = NULL_SCHEMA_AND_VALUE  # type: ignore[attr-defined]


_new_object = object.__new__
_STRUCT = Type.STRUCT


def _check_values(schema: Schema, values: list[object], validate: bool) -> None:
    """:meth:`Struct.from_values`'s checks.

    Raises:
        DataException: If ``schema`` is not a STRUCT schema, the number of values is not the
            number of fields, or (with ``validate``) a value does not match its field.
    """
    if schema._type is not _STRUCT:
        raise DataException(f"Struct requires a struct schema, got {schema._type.value}")
    fields = schema._fields
    if len(values) != len(fields):
        raise DataException(
            f"Struct needs one value per field: {len(fields)} fields, {len(values)} values"
        )
    if validate:
        for field, value in zip(fields, values, strict=True):
            field_schema = field.schema
            if type(value) is not field_schema._exact_type:
                field_schema.validate_value(value, field.name)


class Struct:
    """A record value of a STRUCT schema: values are validated as they are put.

    Example:
        >>> schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
        >>> Struct(schema).put("id", 42).get("id")
        42
    """

    __slots__ = ("_schema", "_values")

    def __init__(self, schema: Schema) -> None:
        """Create an empty struct.

        Raises:
            DataException: If ``schema`` is not a STRUCT schema.
        """
        if schema.type is not Type.STRUCT:
            raise DataException(f"Struct requires a struct schema, got {schema.type.value}")
        self._schema = schema
        self._values: list[object] = [None] * len(schema._fields)

    @classmethod
    def from_dict(cls, schema: Schema, mapping: Mapping[str, object]) -> Struct:
        """Build a struct from a mapping; nested mappings become nested structs.

        Raises:
            DataException: On unknown fields, invalid values or missing required fields.
        """
        struct = cls(schema)
        for key, value in mapping.items():
            field = struct._lookup(key)
            if isinstance(value, Mapping) and field.schema.type is Type.STRUCT:
                value = cls.from_dict(field.schema, value)
            struct.put(key, value)
        struct.validate()
        return struct

    @classmethod
    def from_values(cls, schema: Schema, values: Iterable[object], validate: bool = True) -> Struct:
        """Build a struct from one value per field, in field order (``None`` for unset).

        A list is kept as it is, not copied: do not change it afterwards.

        Args:
            schema: A STRUCT schema.
            values: The field values, as :meth:`field_values` returns them.
            validate: Check every value as :meth:`put` does. Pass ``False`` only for values
                already known to be valid for their fields: a converter that checked what it
                decoded, a transform copying the values of a valid struct. Nothing is checked
                then (it saves :meth:`put`'s per-field check: most of the cost of building a
                struct); a wrong value surfaces only when the struct is validated or
                converted.

        Raises:
            DataException: If ``schema`` is not a STRUCT schema, the number of values is not
                the number of fields, or (with ``validate``) a value does not match its field.
        """
        if schema._type is not _STRUCT:
            raise DataException(f"Struct requires a struct schema, got {schema._type.value}")
        if type(values) is not list:
            values = list(values)
        # One test for the usual case (a converter's or transform's unchecked struct), the
        # checks in a call of their own: this is on every record's path, several times.
        if validate or len(values) != len(schema._fields):
            _check_values(schema, values, validate)
        struct = _new_object(cls)
        struct._schema = schema
        struct._values = values
        return struct

    @classmethod
    def maker(cls, schema: Schema) -> Callable[[list[object]], Struct]:
        """A function ``make(values)`` doing ``from_values(schema, values, validate=False)``
        for lists of values, at about half its cost: for code that builds many structs of
        one schema (a converter's compiled reader, a transform). Keep it per schema.

        ``make`` checks only the number of values; a list is kept, not copied.

        Raises:
            DataException: If ``schema`` is not a STRUCT schema; from ``make``, if the number
                of values is not the number of fields.
        """
        if schema._type is not _STRUCT:
            raise DataException(f"Struct requires a struct schema, got {schema._type.value}")
        count = len(schema._fields)

        def make(values: list[object]) -> Struct:
            if type(values) is not list or len(values) != count:
                values = list(values)
                _check_values(schema, values, False)  # the count's error, if any
            struct = _new_object(cls)
            struct._schema = schema
            struct._values = values
            return struct

        return make

    def field_values(self) -> list[object]:
        """The values of all fields in field order, ``None`` for unset ones (no defaults): a
        new list, so a transform can change it and build another struct from it."""
        return self._values.copy()

    if TYPE_CHECKING:

        @property
        def schema(self) -> Schema:
            """The struct's schema."""

    else:
        # A C-level getter: read by every transform and converter for every struct (a
        # Python property function cost ~35 ns more per read).
        schema = property(operator.attrgetter("_schema"), doc="The struct's schema.")

    def _lookup(self, field_name: str | Field) -> Field:
        if type(field_name) is str:  # the usual case: one dict lookup
            found = self._schema._fields_by_name.get(field_name)
            if found is not None:
                return found
        name = field_name.name if isinstance(field_name, Field) else field_name
        field = self._schema._fields_by_name.get(name)
        if field is None:
            known = ", ".join(self._schema._fields_by_name) or "none"
            raise DataException(f'Unknown field "{name}" for struct schema (fields: {known})')
        return field

    def put(self, field_name: str | Field, value: object) -> Struct:
        """Set a field; returns ``self`` for chaining.

        Raises:
            DataException: If the field is unknown or the value does not match.
        """
        field = self._lookup(field_name)
        schema = field.schema
        if type(value) is not schema._exact_type:  # exact type: valid, nothing to check
            schema.validate_value(value, field.name)
        self._values[field.index] = value
        return self

    def get(self, field_name: str | Field) -> Any:
        """Return the field's value, or its schema default if unset."""
        field = self._lookup(field_name)
        value = self._values[field.index]
        return field.schema.default_value if value is None else value

    def get_without_default(self, field_name: str | Field) -> Any:
        """Return the field's value, ``None`` if unset (defaults ignored)."""
        return self._values[self._lookup(field_name).index]

    def validate(self, _path: str | None = None) -> None:
        """Check that every required field is set, recursing into nested structs.

        Raises:
            DataException: Naming the first invalid or missing field.
        """
        for field in self._schema._fields:
            path = f"{_path}.{field.name}" if _path else field.name
            value = self._values[field.index]
            field.schema.validate_value(value, path)
            if isinstance(value, Struct):
                value.validate(path)

    def __iter__(self) -> Iterator[tuple[str, object]]:
        for field in self._schema._fields:
            yield field.name, self._values[field.index]

    def to_dict(self) -> dict[str, object]:
        """Return the set values (not defaults) as a dict; nested structs become dicts."""
        return {k: v.to_dict() if isinstance(v, Struct) else v for k, v in self}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Struct):
            return NotImplemented
        return self._schema == other._schema and self._values == other._values

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ",".join(f"{k}={v!r}" for k, v in self if v is not None)
        return f"Struct{{{inner}}}"
