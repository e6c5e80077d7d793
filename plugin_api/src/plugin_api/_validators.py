"""Config value validators (re-exported by :mod:`plugin_api.config`).

A validator is any callable ``(name, value) -> None`` that raises
:class:`~plugin_api.errors.ConfigException` for an invalid value. The classes
here also describe their valid values through ``str()``, which becomes the
"Valid Values" column of generated docs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable

from plugin_api.errors import ConfigException

__all__ = [
    "CaseInsensitiveValidString",
    "LambdaValidator",
    "NonEmptyString",
    "NonNullValidator",
    "Range",
    "ValidList",
    "ValidString",
    "Validator",
]


class Validator(ABC):
    """Base class of the built-in validators."""

    @abstractmethod
    def ensure_valid(self, name: str, value: object) -> None:
        """Raise :class:`ConfigException` if ``value`` is invalid for key ``name``."""

    def __call__(self, name: str, value: object) -> None:
        self.ensure_valid(name, value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


class Range(Validator):
    """Numeric range, inclusive at both ends; ``None`` bounds are open."""

    def __init__(self, min: float | None = None, max: float | None = None) -> None:
        """Create a range; prefer :meth:`at_least` and :meth:`between`."""
        self.min = min
        self.max = max

    @classmethod
    def at_least(cls, min: float) -> Range:
        """Values ``>= min``."""
        return cls(min, None)

    @classmethod
    def between(cls, min: float, max: float) -> Range:
        """Values ``min <= v <= max``."""
        return cls(min, max)

    def ensure_valid(self, name: str, value: object) -> None:
        """Check the bounds; ``None`` is invalid."""
        if value is None:
            raise ConfigException(name, None, "Value must be non-null")
        if self.min is not None and value < self.min:  # type: ignore[operator]
            raise ConfigException(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:  # type: ignore[operator]
            raise ConfigException(name, value, f"Value must be no more than {self.max}")

    def __str__(self) -> str:
        if self.min is None and self.max is None:
            return "[...]"
        if self.min is None:
            return f"[...,{self.max}]"
        if self.max is None:
            return f"[{self.min},...]"
        return f"[{self.min},...,{self.max}]"


class ValidString(Validator):
    """A string from a fixed set (case-sensitive)."""

    def __init__(self, values: Iterable[str]) -> None:
        """Create the validator; prefer :meth:`in_`."""
        self.values = list(values)

    @classmethod
    def in_(cls, *values: str) -> ValidString:
        """Accept exactly one of ``values``."""
        return cls(values)

    def ensure_valid(self, name: str, value: object) -> None:
        """Check membership."""
        if value not in self.values:
            raise ConfigException(name, value, f"String must be one of: {', '.join(self.values)}")

    def __str__(self) -> str:
        return f"[{', '.join(self.values)}]"


class CaseInsensitiveValidString(ValidString):
    """A string from a fixed set, compared case-insensitively.

    Messages list the values as Kafka's do: upper-cased, in the order of a Java ``HashSet``
    (``NUMERIC, BASE64`` for JsonConverter's ``decimal.format``), not in definition order.
    """

    def __init__(self, values: Iterable[str]) -> None:
        """Create the validator; prefer :meth:`in_`."""
        super().__init__(values)
        self._folded = frozenset(v.casefold() for v in self.values)
        self._shown = ", ".join(_java_hash_set_order([v.upper() for v in self.values]))

    def ensure_valid(self, name: str, value: object) -> None:
        """Check membership ignoring case."""
        if not isinstance(value, str) or value.casefold() not in self._folded:
            raise ConfigException(
                name, value, f"String must be one of (case insensitive): {self._shown}"
            )

    def __str__(self) -> str:
        return f"(case insensitive) [{self._shown}]"


def _java_string_hash(text: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit number (over UTF-16 code units)."""
    data = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h


def _java_hash_set_order(values: list[str]) -> list[str]:
    """The iteration order of a ``java.util.HashSet`` the values were added to in order."""
    unique = list(dict.fromkeys(values))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2

    def bucket(text: str) -> int:
        h = _java_string_hash(text)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(unique, key=bucket)  # stable: a bucket keeps insertion order


class NonEmptyString(Validator):
    """A non-empty string (``None`` is accepted, as in Kafka)."""

    def ensure_valid(self, name: str, value: object) -> None:
        """Reject the empty string."""
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigException(name, value, "String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


class NonNullValidator(Validator):
    """Any value except ``None``."""

    def ensure_valid(self, name: str, value: object) -> None:
        """Reject ``None``."""
        if value is None:
            raise ConfigException(name, None, "entry must be non null")

    def __str__(self) -> str:
        return "non-null string"


class ValidList(Validator):
    """A list whose every element comes from a fixed set."""

    def __init__(self, values: Iterable[str]) -> None:
        """Create the validator; prefer :meth:`in_`."""
        self.values = list(values)

    @classmethod
    def in_(cls, *values: str) -> ValidList:
        """Accept lists of elements from ``values``."""
        return cls(values)

    def ensure_valid(self, name: str, value: object) -> None:
        """Check every element."""
        if value is None:
            raise ConfigException(name, None, "Value must be non-null")
        for item in value:  # type: ignore[attr-defined]
            if item not in self.values:
                raise ConfigException(
                    name, item, f"Each element must be one of: {', '.join(self.values)}"
                )

    def __str__(self) -> str:
        return f"[{', '.join(self.values)}]"


class LambdaValidator(Validator):
    """Wraps a function ``(name, value) -> None`` that raises ConfigException.

    The function may instead return ``False`` to reject the value generically.
    """

    def __init__(self, fn: Callable[[str, object], object], doc: str) -> None:
        """Create the validator.

        Args:
            fn: The check.
            doc: Description of the valid values.
        """
        self.fn = fn
        self.doc = doc

    @classmethod
    def with_(cls, fn: Callable[[str, object], object], doc: str) -> LambdaValidator:
        """Same as the constructor (mirrors Kafka's ``LambdaValidator.with``)."""
        return cls(fn, doc)

    def ensure_valid(self, name: str, value: object) -> None:
        """Run the function."""
        if self.fn(name, value) is False:
            raise ConfigException(name, value, f"Value must be {self.doc}")

    def __str__(self) -> str:
        return self.doc
