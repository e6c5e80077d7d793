"""Config providers (KIP-297): keep secrets out of connector configs with ``${provider:path:key}``.

A connector config may hold placeholders such as ``${file:/etc/secrets.properties:db.password}``
or ``${env:DB_PASSWORD}``. The worker resolves them only when it hands a config to the
connector or its tasks; the stored config, REST responses and logs keep the placeholder. The
worker's own properties are resolved once, when it starts (as Kafka's WorkerConfig), see
:meth:`core.worker_config.WorkerConfig.resolved`.

Providers are worker extensions (they run in the worker, not in a plugin host), configured as
in Kafka::

    config.providers=file,env,dir
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
    config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider
    config.providers.file.param.allowed.paths=/etc/secrets

Kafka's class names resolve to the built-in providers below, as do their simple names; other
providers come from the ``copycat_config_providers`` hook (see :mod:`core.hookspecs`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from core.properties import PropertiesError, parse_properties
from core.secrets import register as register_secrets
from core.secrets import scrub_with
from plugin_api import ConfigException

__all__ = [
    "BUILTIN_PROVIDERS",
    "ConfigProvider",
    "ConfigResolver",
    "DirectoryConfigProvider",
    "EnvVarConfigProvider",
    "FileConfigProvider",
    "Resolved",
]

log = logging.getLogger("copycat.config_providers")

# Kafka's ConfigTransformer pattern: ${provider:[path:]key}; path and key may not contain '}'.
PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
_KAFKA_PACKAGE = "org.apache.kafka.common.config.provider."


@runtime_checkable
class ConfigProvider(Protocol):
    """Looks up secret values; called on the herder's thread while a config is resolved."""

    def configure(self, configs: Mapping[str, str]) -> None:
        """Receive ``config.providers.<alias>.param.*`` (prefix removed); called once."""
        ...

    def get(self, path: str, keys: Iterable[str]) -> dict[str, str]:
        """Values of ``keys`` under ``path``; missing keys are left out of the result."""
        ...

    def close(self) -> None: ...


class _AllowedPaths:
    """``allowed.paths``: when set, only files under these directories may be read.

    As Kafka's: the allowed paths must be absolute and exist (else the worker does not start);
    a path asked for is normalised without touching the file system (``..`` collapsed, links
    not followed) and is allowed when it lies under one of them. A path that is not (a relative
    one included) is no error: the provider finds nothing there and logs a warning.
    """

    def __init__(self) -> None:
        self.roots: list[Path] | None = None

    def configure(self, configs: Mapping[str, str]) -> None:
        raw = configs.get("allowed.paths", "").strip()
        roots = []
        for entry in (p.strip() for p in raw.split(",")):
            if not entry:
                continue
            root = Path(os.path.normpath(entry))
            if not root.is_absolute():
                raise ConfigException(f"Path {root} is not absolute")
            if not root.exists():
                raise ConfigException(f"Path {root} does not exist")
            roots.append(root)
        self.roots = roots or None

    def check(self, path: str, provider: str) -> Path | None:
        """The path to read, or None (logged) when ``allowed.paths`` does not allow it."""
        if self.roots is None:
            return Path(path)
        normalised = Path(os.path.normpath(path))
        if any(normalised.is_relative_to(root) for root in self.roots):
            return normalised
        logging.getLogger(f"{log.name}.{provider}").warning(
            "The path %s is not allowed to be accessed", path
        )
        return None


class FileConfigProvider:
    """``${file:/path/to/file.properties:key}``: a key of a Java properties file."""

    def __init__(self) -> None:
        self._allowed = _AllowedPaths()

    def configure(self, configs: Mapping[str, str]) -> None:
        self._allowed.configure(configs)

    def get(self, path: str, keys: Iterable[str]) -> dict[str, str]:
        if not path:  # ${file:key}: no file named, nothing found (Kafka's answer)
            return {}
        file = self._allowed.check(path, type(self).__name__)
        if file is None:
            return {}
        try:
            props = parse_properties(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            log.error("Could not read properties from file %s: %s", path, reason)
            raise ConfigException(f"Could not read properties from file {path}") from None
        except PropertiesError:  # its message quotes the line, which may hold a secret
            raise ConfigException(f"{path} is not a valid properties file") from None
        return {k: props[k] for k in keys if k in props}

    def close(self) -> None:
        pass


class DirectoryConfigProvider:
    """``${dir:/path/to/dir:file}``: the content of a file in a directory (e.g. a k8s secret)."""

    def __init__(self) -> None:
        self._allowed = _AllowedPaths()

    def configure(self, configs: Mapping[str, str]) -> None:
        self._allowed.configure(configs)

    def get(self, path: str, keys: Iterable[str]) -> dict[str, str]:
        if not path:  # ${dir:file}: no directory named, nothing found (Kafka's answer)
            return {}
        directory = self._allowed.check(path, type(self).__name__)
        if directory is None:
            return {}
        if not directory.is_dir():
            log.warning("The path %s is not a directory", path)
            return {}
        found = {}
        for key in keys:
            file = directory / key
            if file.parent != directory or not file.is_file():
                continue  # only regular files directly in the directory, like Kafka
            try:  # the exact text, line ends included (read_text would translate them)
                found[key] = file.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
                log.error("Could not read file %s for property %s: %s", file, key, reason)
                raise ConfigException(f"Could not read file {file} for property {key}") from None
        return found

    def close(self) -> None:
        pass


class EnvVarConfigProvider:
    """``${env:VAR}``: an environment variable, optionally limited by ``allowlist.pattern``."""

    def __init__(self) -> None:
        self._allow: re.Pattern[str] | None = None

    def configure(self, configs: Mapping[str, str]) -> None:
        pattern = configs.get("allowlist.pattern")
        self._allow = re.compile(pattern) if pattern else None

    def get(self, path: str, keys: Iterable[str]) -> dict[str, str]:
        if path:
            message = f"Path is not supported for EnvVarConfigProvider, invalid value '{path}'"
            log.error("%s", message)
            raise ConfigException(message)
        return {
            k: os.environ[k]
            for k in keys
            if k in os.environ and (self._allow is None or self._allow.fullmatch(k))
        }

    def close(self) -> None:
        pass


ProviderFactory = Callable[[], ConfigProvider]

BUILTIN_PROVIDERS: dict[str, ProviderFactory] = {}
for _cls in (FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider):
    for _name in (_cls.__name__, _KAFKA_PACKAGE + _cls.__name__, f"{__name__}.{_cls.__name__}"):
        BUILTIN_PROVIDERS[_name] = _cls


@dataclass(frozen=True)
class Resolved:
    """A resolved config and what it takes to hide the secrets again."""

    config: dict[str, str]
    secrets: dict[str, str]
    """Each substituted value mapped to the placeholder text it replaced."""

    def scrub(self, text: str) -> str:
        """``text`` with every substituted value put back as its placeholder (as a token:
        see :mod:`core.secrets`)."""
        return scrub_with(text, self.secrets)


class ConfigResolver:
    """The worker's configured providers; resolves placeholders in connector configs."""

    def __init__(self, providers: Mapping[str, ConfigProvider]) -> None:
        self.providers = dict(providers)

    @classmethod
    def from_worker_config(
        cls,
        aliases: Iterable[str],
        provider_configs: Mapping[str, Mapping[str, str]],
        factories: Mapping[str, ProviderFactory],
    ) -> ConfigResolver:
        providers: dict[str, ConfigProvider] = {}
        for alias in aliases:
            conf = provider_configs.get(alias, {})
            class_name = conf.get("class")
            if not class_name:
                raise ConfigException(
                    f"config.providers.{alias}.class",
                    None,
                    f"config provider '{alias}' needs a class",
                )
            factory = factories.get(class_name) or factories.get(class_name.rsplit(".", 1)[-1])
            if factory is None:
                raise ConfigException(
                    f"config.providers.{alias}.class",
                    class_name,
                    f"unknown config provider class; known: {', '.join(sorted(factories))}",
                )
            provider = factory()
            provider.configure(
                {k[len("param.") :]: v for k, v in conf.items() if k.startswith("param.")}
            )
            providers[alias] = provider
        return cls(providers)

    def resolve(self, config: Mapping[str, str]) -> Resolved:
        """Substitute every ``${provider:[path:]key}`` whose provider and key exist.

        Like Kafka, a placeholder naming an unknown provider, or a key the provider does not
        have, is left as it is.

        Raises:
            ConfigException: a provider failed (e.g. unreadable file), with the provider's
                message as Kafka's ConfigTransformer passes it on (Kafka's providers name the
                path, never a value).
        """
        out: dict[str, str] = {}
        found_secrets: dict[str, str] = {}
        for key, value in config.items():
            if not isinstance(value, str) or "${" not in value:
                out[key] = value
                continue

            def substitute(match: re.Match[str]) -> str:
                provider = self.providers.get(match.group(1))
                if provider is None:
                    return match.group(0)
                path, name = match.group(2) or "", match.group(3)
                found = provider.get(path, [name])  # its ConfigException is the answer
                if name not in found:
                    return match.group(0)
                found_secrets[found[name]] = match.group(0)
                return found[name]

            out[key] = PLACEHOLDER.sub(substitute, value)
        register_secrets(found_secrets, str(config.get("name", "")))
        return Resolved(out, found_secrets)

    def close(self) -> None:
        for provider in self.providers.values():
            try:
                provider.close()
            except Exception:  # noqa: BLE001
                log.warning("config provider did not close cleanly", exc_info=True)
