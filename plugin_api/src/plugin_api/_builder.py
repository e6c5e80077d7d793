"""The fluent :class:`SchemaBuilder` (re-exported by :mod:`plugin_api.data`)."""

from __future__ import annotations

from collections.abc import Mapping

from plugin_api._schema import Field, Schema, Type
from plugin_api.errors import SchemaBuilderException

_UNSET = object()


def _as_schema(schema: Schema | SchemaBuilder) -> Schema:
    return schema.build() if isinstance(schema, SchemaBuilder) else schema


class SchemaBuilder:
    """Builds :class:`Schema` objects fluently.

    Setting a property twice with different values raises
    :class:`SchemaBuilderException`, as in Kafka Connect.

    Example:
        >>> schema = (
        ...     SchemaBuilder.struct().name("com.example.User")
        ...     .field("id", Schema.INT64_SCHEMA)
        ...     .field("email", SchemaBuilder.string().optional())
        ...     .build()
        ... )
    """

    __slots__ = (
        "_type",
        "_optional",
        "_default_value",
        "_name",
        "_version",
        "_doc",
        "_parameters",
        "_fields",
        "_key_schema",
        "_value_schema",
    )

    def __init__(self, type: Type | str) -> None:
        """Start a builder for ``type`` (a :class:`Type` or its lower-case name)."""
        self._type = type if isinstance(type, Type) else Type(type)
        self._optional: object = _UNSET
        self._default_value: object = _UNSET
        self._name: object = _UNSET
        self._version: object = _UNSET
        self._doc: object = _UNSET
        self._parameters: dict[str, str] | None = None
        self._fields: dict[str, Field] = {}
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    # -- factories -----------------------------------------------------------------

    @classmethod
    def int8(cls) -> SchemaBuilder:
        """Builder for an INT8 schema."""
        return cls(Type.INT8)

    @classmethod
    def int16(cls) -> SchemaBuilder:
        """Builder for an INT16 schema."""
        return cls(Type.INT16)

    @classmethod
    def int32(cls) -> SchemaBuilder:
        """Builder for an INT32 schema."""
        return cls(Type.INT32)

    @classmethod
    def int64(cls) -> SchemaBuilder:
        """Builder for an INT64 schema."""
        return cls(Type.INT64)

    @classmethod
    def float32(cls) -> SchemaBuilder:
        """Builder for a FLOAT32 schema."""
        return cls(Type.FLOAT32)

    @classmethod
    def float64(cls) -> SchemaBuilder:
        """Builder for a FLOAT64 schema."""
        return cls(Type.FLOAT64)

    @classmethod
    def bool_(cls) -> SchemaBuilder:
        """Builder for a BOOLEAN schema."""
        return cls(Type.BOOLEAN)

    @classmethod
    def string(cls) -> SchemaBuilder:
        """Builder for a STRING schema."""
        return cls(Type.STRING)

    @classmethod
    def bytes_(cls) -> SchemaBuilder:
        """Builder for a BYTES schema."""
        return cls(Type.BYTES)

    @classmethod
    def struct(cls) -> SchemaBuilder:
        """Builder for a STRUCT schema; add fields with :meth:`field`."""
        return cls(Type.STRUCT)

    @classmethod
    def array(cls, value_schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """Builder for an ARRAY of ``value_schema`` elements."""
        builder = cls(Type.ARRAY)
        builder._value_schema = _as_schema(value_schema)
        return builder

    @classmethod
    def map(
        cls, key_schema: Schema | SchemaBuilder, value_schema: Schema | SchemaBuilder
    ) -> SchemaBuilder:
        """Builder for a MAP from ``key_schema`` to ``value_schema``."""
        builder = cls(Type.MAP)
        builder._key_schema = _as_schema(key_schema)
        builder._value_schema = _as_schema(value_schema)
        return builder

    # -- properties ----------------------------------------------------------------

    def _set(self, attr: str, label: str, value: object) -> SchemaBuilder:
        current = getattr(self, attr)
        if current is not _UNSET and current != value:
            raise SchemaBuilderException(
                f"Invalid SchemaBuilder call: {label} has already been set to {current!r}, "
                f"cannot set it to {value!r}"
            )
        setattr(self, attr, value)
        return self

    @property
    def type(self) -> Type:
        """The type being built."""
        return self._type

    def optional(self) -> SchemaBuilder:
        """Make ``None`` a valid value."""
        return self._set("_optional", "optional", True)

    def required(self) -> SchemaBuilder:
        """Make ``None`` invalid (the default)."""
        return self._set("_optional", "optional", False)

    def default_value(self, value: object) -> SchemaBuilder:
        """Set the default value; it is validated against the schema so far.

        Raises:
            DataException: If the value does not match the schema.
        """
        if value is not None and self._type is not Type.STRUCT:
            self._provisional().validate_value(
                value, self._name if isinstance(self._name, str) else None
            )
        return self._set("_default_value", "default value", value)

    def name(self, name: str) -> SchemaBuilder:
        """Set the schema name."""
        return self._set("_name", "name", name)

    def version(self, version: int) -> SchemaBuilder:
        """Set the schema version."""
        return self._set("_version", "version", version)

    def doc(self, doc: str) -> SchemaBuilder:
        """Set the schema documentation."""
        return self._set("_doc", "doc", doc)

    def parameter(self, key: str, value: str) -> SchemaBuilder:
        """Add one schema parameter."""
        if self._parameters is None:
            self._parameters = {}
        self._parameters[key] = value
        return self

    def parameters(self, parameters: Mapping[str, str]) -> SchemaBuilder:
        """Add several schema parameters."""
        for key, value in parameters.items():
            self.parameter(key, value)
        return self

    def field(self, name: str, schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """Append a field to a STRUCT schema.

        Raises:
            SchemaBuilderException: If this is not a STRUCT builder, or the name is taken.
        """
        if self._type is not Type.STRUCT:
            raise SchemaBuilderException(f"Cannot create fields on type {self._type.name}")
        # Kafka's SchemaBuilder.field words, which SMTs' and converters' errors carry.
        if not name:
            raise SchemaBuilderException("fieldName cannot be null.")
        if name in self._fields:
            raise SchemaBuilderException(
                f"Cannot create field because of field name duplication {name}"
            )
        self._fields[name] = Field(name, len(self._fields), _as_schema(schema))
        return self

    def _get(self, attr: str, fallback: object = None) -> object:
        value = getattr(self, attr)
        return fallback if value is _UNSET else value

    def _provisional(self) -> Schema:
        return Schema(
            self._type,
            optional=bool(self._get("_optional", False)),
            name=self._get("_name"),  # type: ignore[arg-type]
            parameters=self._parameters,
            fields=list(self._fields.values()),
            key_schema=self._key_schema,
            value_schema=self._value_schema,
        )

    def build(self) -> Schema:
        """Return the immutable :class:`Schema`.

        Raises:
            SchemaBuilderException: If MAP/ARRAY parts are missing.
            DataException: If the default value does not match.
        """
        return Schema(
            self._type,
            optional=bool(self._get("_optional", False)),
            default_value=self._get("_default_value"),
            name=self._get("_name"),  # type: ignore[arg-type]
            version=self._get("_version"),  # type: ignore[arg-type]
            doc=self._get("_doc"),  # type: ignore[arg-type]
            parameters=self._parameters,
            fields=list(self._fields.values()),
            key_schema=self._key_schema,
            value_schema=self._value_schema,
        )

    schema = build

    def __repr__(self) -> str:
        return f"SchemaBuilder({self._type.value}, name={self._get('_name')!r})"
