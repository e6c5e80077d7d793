"""The one exception tree of the plugin API.

Every error a plugin raises, or the runtime raises on its behalf, derives from
:class:`ConnectException`. The runtime maps the branches directly onto its
behaviour: retriable errors are retried, data errors go through
``errors.tolerance`` and the dead letter queue, config errors become HTTP 400.

::

    Exception
     └── ConnectException                  any failure in a connector, task or plugin
          ├── RetriableException           transient; the runtime retries the operation
          ├── DataException                a record or value does not fit its schema
          │    └── SchemaBuilderException  a schema was built inconsistently
          ├── ConfigException              a configuration key has an invalid value
          ├── NotFoundException            a connector, task or plugin does not exist
          └── IllegalWorkerStateException  the worker is in a state that forbids the call

Errors name what was at fault (the field path, the config key, the plugin) and
chain their cause with ``raise ... from exc``.
"""

from __future__ import annotations

__all__ = [
    "ConfigException",
    "ConnectException",
    "DataException",
    "IllegalWorkerStateException",
    "NotFoundException",
    "RetriableException",
    "SchemaBuilderException",
]


class _Missing:
    """Sentinel type telling "no value given" apart from ``None``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING: object = _Missing()


class ConnectException(Exception):
    """Base class of every error raised by Copycat or its plugins."""


class RetriableException(ConnectException):
    """A transient failure; the runtime may retry the operation that raised it."""


class DataException(ConnectException):
    """A value does not match its schema, or data could not be (de)serialized."""


class SchemaBuilderException(DataException):
    """A :class:`~plugin_api.data.SchemaBuilder` was used inconsistently."""


def _java_text(value: object) -> str:
    """A value as Java's string concatenation shows it: ``null``, ``true``, ``[a, b]``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_java_text(v) for v in value) + "]"
    return str(value)


class ConfigException(ConnectException):
    """A configuration is invalid.

    Called with one argument it is a plain message. Called with a key and a
    value (and optionally a reason) it builds Kafka's message
    ``Invalid value {value} for configuration {name}: {message}``.

    Attributes:
        name: The offending configuration key, or ``None`` if not known.
        value: The offending value, or ``None`` if not known.
    """

    def __init__(
        self,
        name_or_message: str,
        value: object = _MISSING,
        message: str | None = None,
    ) -> None:
        """Create the exception.

        Args:
            name_or_message: The config key (if ``value`` is given) or the message.
            value: The offending value.
            message: Why the value is invalid.
        """
        if value is _MISSING:
            self.name: str | None = None
            self.value: object = None
            text = name_or_message
        else:
            self.name = name_or_message
            self.value = value
            text = f"Invalid value {_java_text(value)} for configuration {name_or_message}"
            if message is not None:
                text += f": {message}"
        super().__init__(text)


class NotFoundException(ConnectException):
    """A connector, task, plugin or other named entity does not exist."""


class IllegalWorkerStateException(ConnectException):
    """The worker is not in a state where the requested operation is allowed."""
