"""Declarative configuration: one :class:`ConfigDef` per component.

The same table drives parsing (strings from ``.properties`` files and REST
bodies become typed values), defaults, validation, the REST
``config/validate`` response (:func:`config_infos`) and generated docs.

Example:
    >>> CONFIG = (
    ...     ConfigDef()
    ...     .define("topic", ConfigType.STRING, importance=Importance.HIGH,
    ...             documentation="Topic to write to.")
    ...     .define("batch.size", ConfigType.INT, 100, Range.at_least(1))
    ... )
    >>> CONFIG.parse({"topic": "t"})["batch.size"]
    100
"""

from __future__ import annotations

import builtins
import enum
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from plugin_api._validators import (
    CaseInsensitiveValidString,
    LambdaValidator,
    NonEmptyString,
    NonNullValidator,
    Range,
    Validator,
    ValidList,
    ValidString,
)
from plugin_api.errors import ConfigException

__all__ = [
    "NO_DEFAULT",
    "AbstractConfig",
    "CaseInsensitiveValidString",
    "ConfigDef",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "Importance",
    "LambdaValidator",
    "NonEmptyString",
    "NonNullValidator",
    "Password",
    "Range",
    "Recommender",
    "ValidList",
    "ValidString",
    "Validator",
    "Width",
    "config_infos",
]

ValidatorFn = Callable[[str, Any], None]


class ConfigType(enum.Enum):
    """Type of a config key; the value is Kafka's upper-case name."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(enum.Enum):
    """How much a user needs to care about a key."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(enum.Enum):
    """Display width hint for UIs."""

    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class _NoDefault:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""Default of a required key: parsing fails when the key is missing."""


class Password:
    """A secret that never shows up in logs, reprs or REST responses."""

    __slots__ = ("_value",)
    HIDDEN = "[hidden]"

    def __init__(self, value: str) -> None:
        """Wrap ``value``."""
        self._value = value

    @property
    def value(self) -> str:
        """The secret itself."""
        return self._value

    def __str__(self) -> str:
        return self.HIDDEN

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class Recommender(Protocol):
    """Suggests values and visibility of a key from the other parsed values."""

    def valid_values(self, name: str, parsed_config: Mapping[str, object]) -> list[object]:
        """Return the recommended values of ``name``."""
        ...

    def visible(self, name: str, parsed_config: Mapping[str, object]) -> bool:
        """Return whether ``name`` should be shown."""
        ...


# Java's Integer/Short/Long.parseInt: an optional sign and decimal digits, nothing else (no
# "1_000", which Python's int() reads).
_JAVA_INTEGER = re.compile(r"[+-]?\d+")

# Kafka's ConfigDef splits a list at commas with Java's whitespace (\s) around them.
_JAVA_LIST_COMMA = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")


def java_trim(text: str) -> str:
    """Java's ``String.trim``, which Kafka's ConfigDef applies to every string value: the
    characters up to U+0020 off both ends, nothing else (a no-break space stays)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


_INT_BOUNDS = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1, "16-bit integer"),
    ConfigType.INT: (-(2**31), 2**31 - 1, "32-bit integer"),
    ConfigType.LONG: (-(2**63), 2**63 - 1, "64-bit integer"),
}


def parse_type(name: str, value: object, type: ConfigType) -> Any:
    """Convert ``value`` (usually a string) to the Python value of ``type``.

    Raises:
        ConfigException: Naming the key, the value and the expected type.
    """
    if value is None:
        return None
    text = java_trim(value) if isinstance(value, str) else None
    if type is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ConfigException(name, value, "Expected value to be either true or false")
    if type is ConfigType.STRING:
        if text is None:
            raise ConfigException(
                name, value, f"Expected value to be a string, but it was a {_tname(value)}"
            )
        return text
    if type in _INT_BOUNDS:
        low, high, label = _INT_BOUNDS[type]
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif text is not None:
            # As Kafka's ConfigDef: a string that is no integer, or one out of the type's range
            # (Java's parse fails on both), is "Not a number of type INT".
            if not _JAVA_INTEGER.fullmatch(text) or not low <= int(text) <= high:
                raise ConfigException(name, value, f"Not a number of type {type.value}")
            number = int(text)
        else:
            raise ConfigException(
                name, value, f"Expected value to be a {label}, but it was a {_tname(value)}"
            )
        if not low <= number <= high:
            raise ConfigException(
                name, value, f"Expected value to be a {label}, but it is out of range"
            )
        return number
    if type is ConfigType.DOUBLE:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if text is not None:
            try:
                return float(text)
            except ValueError:
                raise ConfigException(name, value, "Not a number of type DOUBLE") from None
        raise ConfigException(
            name, value, f"Expected value to be a double, but it was a {_tname(value)}"
        )
    if type is ConfigType.LIST:
        if isinstance(value, (list, tuple)):
            return list(value)
        if text is not None:
            return [] if not text else _JAVA_LIST_COMMA.split(text)
        raise ConfigException(
            name, value, f"Expected a comma separated list, but it was a {_tname(value)}"
        )
    if type is ConfigType.CLASS:
        if isinstance(value, builtins.type):
            return f"{value.__module__}.{value.__qualname__}"
        if text is not None:
            return text
        raise ConfigException(name, value, "Expected a class name as a string")
    if type is ConfigType.PASSWORD:
        if isinstance(value, Password):
            return value
        if text is not None:
            return Password(text)
        raise ConfigException(
            name, value, f"Expected value to be a string, but it was a {_tname(value)}"
        )
    raise ConfigException(name, value, f"Unknown type {type}")


def _tname(value: object) -> str:
    return builtins.type(value).__name__


def to_string(value: object, type: ConfigType | None = None) -> str | None:
    """Render a parsed value the way Kafka shows it in REST and docs (secrets hidden)."""
    if value is None or value is NO_DEFAULT:
        return None
    if isinstance(value, Password) or type is ConfigType.PASSWORD:
        return Password.HIDDEN
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, builtins.type):
        return f"{value.__module__}.{value.__qualname__}"
    return str(value)


@dataclass(frozen=True)
class ConfigKey:
    """The definition of one config key (see :meth:`ConfigDef.define`)."""

    name: str
    type: ConfigType
    default: Any = NO_DEFAULT
    validator: ValidatorFn | None = None
    importance: Importance = Importance.MEDIUM
    documentation: str = ""
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str | None = None
    dependents: tuple[str, ...] = ()
    recommender: Recommender | None = None
    internal: bool = False

    @property
    def required(self) -> bool:
        """Whether the key has no default."""
        return self.default is NO_DEFAULT


@dataclass
class ConfigValue:
    """The outcome of validating one key (mutable while validation runs)."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    error_messages: list[str] = field(default_factory=list)
    visible: bool = True

    def add_error_message(self, message: str) -> None:
        """Record an error for this key."""
        self.error_messages.append(message)


def _missing_message(name: str) -> str:
    return f'Missing required configuration "{name}" which has no default value.'


class ConfigDef:
    """An ordered table of :class:`ConfigKey` definitions."""

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        """Create a definition, optionally from existing keys."""
        self._keys: dict[str, ConfigKey] = {k.name: k for k in keys}

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        validator: ValidatorFn | None = None,
        importance: Importance = Importance.MEDIUM,
        documentation: str = "",
        group: str | None = None,
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str | None = None,
        dependents: Sequence[str] = (),
        recommender: Recommender | None = None,
    ) -> ConfigDef:
        """Add a key; returns ``self`` for chaining.

        The default is parsed and validated here, so a bad table fails at import.

        Raises:
            ConfigException: If the name is taken or the default is invalid.
        """
        return self._add(
            ConfigKey(
                name,
                type,
                default,
                validator,
                importance,
                documentation,
                group,
                order_in_group,
                width,
                display_name,
                tuple(dependents),
                recommender,
            )
        )

    def define_internal(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        validator: ValidatorFn | None = None,
        importance: Importance = Importance.LOW,
        documentation: str = "",
    ) -> ConfigDef:
        """Add a key that is parsed but left out of docs and :func:`config_infos`."""
        return self._add(
            ConfigKey(name, type, default, validator, importance, documentation, internal=True)
        )

    def _add(self, key: ConfigKey) -> ConfigDef:
        if key.name in self._keys:
            raise ConfigException(f"Configuration {key.name} is defined twice.")
        if key.default is not NO_DEFAULT:
            parsed = parse_type(key.name, key.default, key.type)
            if key.validator is not None:
                key.validator(key.name, parsed)
            object.__setattr__(key, "default", parsed)
        self._keys[key.name] = key
        return self

    @property
    def keys(self) -> dict[str, ConfigKey]:
        """The definitions by name, in definition order (a copy)."""
        return dict(self._keys)

    def names(self) -> list[str]:
        """The key names in definition order."""
        return list(self._keys)

    def groups(self) -> list[str]:
        """Group names in order of first definition."""
        seen: dict[str, None] = {}
        for key in self._keys.values():
            if key.group is not None and not key.internal:
                seen.setdefault(key.group, None)
        return list(seen)

    def merge(self, other: ConfigDef) -> ConfigDef:
        """Return a new definition with the keys of both; ``other`` wins on a clash."""
        merged = ConfigDef(self._keys.values())
        merged._keys.update(other._keys)
        return merged

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def parse(self, props: Mapping[str, object]) -> dict[str, Any]:
        """Parse and validate ``props`` into typed values for every defined key.

        Keys that are not defined are ignored.

        Raises:
            ConfigException: On the first missing required key or invalid value.
        """
        parsed: dict[str, Any] = {}
        for key in self._keys.values():
            if key.name in props:
                value = parse_type(key.name, props[key.name], key.type)
            elif key.default is NO_DEFAULT:
                exc = ConfigException(_missing_message(key.name))
                exc.name = key.name
                raise exc
            else:
                value = key.default
            if key.validator is not None:
                key.validator(key.name, value)
            parsed[key.name] = value
        return parsed

    def validate(self, props: Mapping[str, object]) -> list[ConfigValue]:
        """Validate every key without raising; errors are collected per key.

        Returns:
            One :class:`ConfigValue` per defined key, in definition order.
        """
        results: dict[str, ConfigValue] = {}
        parsed: dict[str, Any] = {}
        for key in self._keys.values():
            result = results[key.name] = ConfigValue(key.name)
            if key.name in props:
                try:
                    value = parse_type(key.name, props[key.name], key.type)
                except ConfigException as exc:
                    result.add_error_message(str(exc))
                    _validate_null(key, result)
                    continue
            elif key.default is NO_DEFAULT:
                result.add_error_message(_missing_message(key.name))
                _validate_null(key, result)
                continue
            else:
                value = key.default
            result.value = parsed[key.name] = value
            if key.validator is not None:
                try:
                    key.validator(key.name, value)
                except ConfigException as exc:
                    result.add_error_message(str(exc))
        for key in self._keys.values():
            if key.recommender is not None:
                result = results[key.name]
                try:
                    result.recommended_values = list(key.recommender.valid_values(key.name, parsed))
                    result.visible = bool(key.recommender.visible(key.name, parsed))
                except ConfigException as exc:
                    result.add_error_message(str(exc))
        return list(results.values())


def _validate_null(key: ConfigKey, result: ConfigValue) -> None:
    """Run the validator of a key that is missing or did not parse on ``None``, as Kafka does
    (it reports that error too: a missing list is "Missing required configuration" and
    "Empty list"). A validator written for real values only, that fails on ``None`` with
    anything but a ConfigException, adds nothing."""
    if key.validator is None:
        return
    try:
        key.validator(key.name, None)
    except ConfigException as exc:
        result.add_error_message(str(exc))
    except Exception:  # noqa: BLE001 - see the docstring
        return


def config_infos(
    config_def: ConfigDef, props: Mapping[str, object], name: str = ""
) -> dict[str, Any]:
    """Validate ``props`` and return Kafka's REST ``ConfigInfos`` JSON shape.

    Args:
        config_def: The component's definition.
        props: The submitted configuration.
        name: The component name reported as ``"name"`` (Kafka uses the class name).

    Returns:
        ``{"name", "error_count", "groups", "configs": [{"definition", "value"}]}``.
    """
    keys = config_def.keys
    configs: list[dict[str, Any]] = []
    error_count = 0
    for result in config_def.validate(props):
        key = keys[result.name]
        if key.internal:
            continue
        error_count += len(result.error_messages)
        configs.append(
            {
                "definition": {
                    "name": key.name,
                    "type": key.type.value,
                    "required": key.required,
                    "default_value": to_string(key.default, key.type),
                    "importance": key.importance.value,
                    "documentation": key.documentation,
                    "group": key.group,
                    "width": key.width.value,
                    "display_name": key.display_name if key.display_name is not None else key.name,
                    "dependents": list(key.dependents),
                    "order": key.order_in_group,
                },
                "value": {
                    "name": key.name,
                    "value": to_string(result.value, key.type),
                    "recommended_values": [
                        to_string(v, key.type) for v in result.recommended_values
                    ],
                    "errors": list(result.error_messages),
                    "visible": result.visible,
                },
            }
        )
    return {
        "name": name,
        "error_count": error_count,
        "groups": config_def.groups(),
        "configs": configs,
    }


class AbstractConfig:
    """A parsed, frozen configuration; components receive this, not a dict of strings.

    Example:
        >>> cfg = AbstractConfig(CONFIG, {"topic": "t"})
        >>> cfg.get_int("batch.size")
        100
    """

    _def: ConfigDef
    _originals: dict[str, object]
    _values: dict[str, Any]
    _used: set[str]

    def __init__(self, config_def: ConfigDef, props: Mapping[str, object]) -> None:
        """Parse ``props``.

        Raises:
            ConfigException: On the first missing or invalid key.
        """
        setter = object.__setattr__
        setter(self, "_def", config_def)
        setter(self, "_originals", dict(props))
        setter(self, "_values", config_def.parse(props))
        setter(self, "_used", set())
        setter(self, "_frozen", True)

    def __setattr__(self, key: str, value: object) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is frozen")
        object.__setattr__(self, key, value)

    @property
    def config_def(self) -> ConfigDef:
        """The definition the values were parsed with."""
        return self._def

    def get(self, name: str) -> Any:
        """Return the typed value of ``name``.

        Raises:
            ConfigException: If ``name`` is not defined.
        """
        if name not in self._values:
            raise ConfigException(f"Unknown configuration '{name}'")
        self._used.add(name)
        return self._values[name]

    def get_string(self, name: str) -> str | None:
        """Typed :meth:`get` for STRING/CLASS keys."""
        return self.get(name)  # type: ignore[no-any-return]

    def get_int(self, name: str) -> int | None:
        """Typed :meth:`get` for INT/SHORT keys."""
        return self.get(name)  # type: ignore[no-any-return]

    def get_long(self, name: str) -> int | None:
        """Typed :meth:`get` for LONG keys."""
        return self.get(name)  # type: ignore[no-any-return]

    def get_short(self, name: str) -> int | None:
        """Typed :meth:`get` for SHORT keys."""
        return self.get(name)  # type: ignore[no-any-return]

    def get_double(self, name: str) -> float | None:
        """Typed :meth:`get` for DOUBLE keys."""
        return self.get(name)  # type: ignore[no-any-return]

    def get_boolean(self, name: str) -> bool | None:
        """Typed :meth:`get` for BOOLEAN keys."""
        return self.get(name)  # type: ignore[no-any-return]

    def get_list(self, name: str) -> list[Any] | None:
        """Typed :meth:`get` for LIST keys."""
        return self.get(name)  # type: ignore[no-any-return]

    def get_password(self, name: str) -> Password | None:
        """Typed :meth:`get` for PASSWORD keys."""
        return self.get(name)  # type: ignore[no-any-return]

    def originals(self) -> dict[str, object]:
        """The raw properties as given (a copy)."""
        return dict(self._originals)

    def originals_with_prefix(self, prefix: str, strip: bool = True) -> dict[str, object]:
        """Raw properties whose key starts with ``prefix``, optionally with it removed."""
        return {
            (k[len(prefix) :] if strip else k): v
            for k, v in self._originals.items()
            if k.startswith(prefix)
        }

    def values(self) -> dict[str, Any]:
        """Typed values of every defined key (a copy)."""
        return dict(self._values)

    def unused(self) -> set[str]:
        """Original keys never read through :meth:`get`."""
        return set(self._originals) - self._used

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AbstractConfig):
            return NotImplemented
        return type(self) is type(other) and self._originals == other._originals

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values)))

    def __repr__(self) -> str:
        shown = {k: to_string(v, self._def.keys[k].type) for k, v in self._values.items()}
        return f"{type(self).__name__}({shown})"
