"""Config providers: ${provider:[path:]key} resolution without a worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config_providers import BUILTIN_PROVIDERS, ConfigResolver
from plugin_api import ConfigException


def _resolver(tmp_path: Path, **params: str) -> ConfigResolver:
    aliases = ["file", "dir", "env"]
    configs = {
        "file": {
            "class": "org.apache.kafka.common.config.provider.FileConfigProvider",
            **{f"param.{k}": v for k, v in params.items()},
        },
        "dir": {"class": "DirectoryConfigProvider"},
        "env": {"class": "EnvVarConfigProvider", "param.allowlist.pattern": "COPYCAT_.*"},
    }
    return ConfigResolver.from_worker_config(aliases, configs, BUILTIN_PROVIDERS)


def test_resolves_each_builtin_provider_and_can_scrub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "s.properties").write_text("user=alice\npassword: hunter2\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "token").write_text("tok-123")
    monkeypatch.setenv("COPYCAT_X", "from-env")
    monkeypatch.setenv("OTHER", "hidden-by-allowlist")
    resolved = _resolver(tmp_path).resolve(
        {
            "a": f"${{file:{tmp_path}/s.properties:password}}",
            "b": f"jdbc://${{file:{tmp_path}/s.properties:user}}@host",
            "c": f"${{dir:{tmp_path}/d:token}}",
            "d": "${env:COPYCAT_X}",
            "e": "${env:OTHER}",
            "f": "${nosuch:key}",
            "g": "plain",
        }
    )
    assert resolved.config == {
        "a": "hunter2",
        "b": "jdbc://alice@host",
        "c": "tok-123",
        "d": "from-env",
        "e": "${env:OTHER}",
        "f": "${nosuch:key}",
        "g": "plain",
    }
    assert resolved.scrub("bad value hunter2 and tok-123") == (
        f"bad value ${{file:{tmp_path}/s.properties:password}} and ${{dir:{tmp_path}/d:token}}"
    )


def test_allowed_paths_and_unreadable_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Outside ``allowed.paths`` (normalised as Kafka's: ``..`` collapsed, a relative path
    never allowed) a provider finds nothing and warns, as Kafka's; a file it may read but
    cannot is an error."""
    (tmp_path / "ok").mkdir()
    (tmp_path / "s.properties").write_text("root=x\n")
    resolver = _resolver(tmp_path, **{"allowed.paths": str(tmp_path / "ok")})
    outside = [
        "${file:/etc/passwd:root}",
        f"${{file:{tmp_path}/ok/../s.properties:root}}",
        "${file:s.properties:root}",
    ]
    config = {f"k{i}": v for i, v in enumerate(outside)}
    with caplog.at_level("WARNING", "copycat.config_providers"):
        assert resolver.resolve(config).config == config
    assert "The path /etc/passwd is not allowed to be accessed" in caplog.text
    with pytest.raises(ConfigException, match="Could not read"):
        resolver.resolve({"k": f"${{file:{tmp_path}/ok/missing.properties:x}}"})


@pytest.mark.parametrize(
    ("allowed", "message"),
    [("relative/dir", "Path relative/dir is not absolute"), ("/no/such", "Path /no/such does")],
)
def test_allowed_paths_must_be_absolute_and_exist(allowed: str, message: str) -> None:
    """Kafka's AllowedPaths refuses them when the provider is configured (the worker's start)."""
    with pytest.raises(ConfigException, match=message):
        ConfigResolver.from_worker_config(
            ["file"],
            {"file": {"class": "FileConfigProvider", "param.allowed.paths": allowed}},
            BUILTIN_PROVIDERS,
        )


def test_unknown_provider_class_is_a_config_error() -> None:
    with pytest.raises(ConfigException, match="unknown config provider"):
        ConfigResolver.from_worker_config(
            ["x"], {"x": {"class": "com.example.Nope"}}, BUILTIN_PROVIDERS
        )


def test_provider_failures_read_as_kafkas(tmp_path: Path) -> None:
    """A provider's failure is its own ConfigException, with Kafka's message (measured on
    Kafka Connect 4.1.1, tests/differential/test_config_placeholders.py); a placeholder naming no
    file is left as it is, as Kafka's FileConfigProvider finds nothing under an empty path."""
    resolver = _resolver(tmp_path, **{"allowed.paths": str(tmp_path)})
    missing = f"${{file:{tmp_path}/missing.properties:pw}}"
    with pytest.raises(ConfigException) as info:
        resolver.resolve({"x.pw": missing})
    assert str(info.value) == f"Could not read properties from file {tmp_path}/missing.properties"
    with pytest.raises(ConfigException) as info:
        resolver.resolve({"x.pw": "${env:foo:COPYCAT_X}"})
    assert str(info.value) == "Path is not supported for EnvVarConfigProvider, invalid value 'foo'"
    no_key = f"${{file:{tmp_path}/db.properties}}"
    assert resolver.resolve({"x.pw": no_key}).config == {"x.pw": no_key}
    assert resolver.resolve({"d": "${dir:token}"}).config == {"d": "${dir:token}"}


def test_a_directory_file_is_read_verbatim(tmp_path: Path) -> None:
    """Kafka's DirectoryConfigProvider gives a file's exact UTF-8 text: its line ends too
    (measured on Kafka Connect 4.1.1: a CRLF file's "\\r\\n" is kept)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "crlf").write_bytes(b"line1\r\nline2\r\n")
    (tmp_path / "d" / "cr").write_bytes(b"a\rb")
    resolved = _resolver(tmp_path).resolve(
        {"a": f"${{dir:{tmp_path}/d:crlf}}", "b": f"${{dir:{tmp_path}/d:cr}}"}
    )
    assert resolved.config == {"a": "line1\r\nline2\r\n", "b": "a\rb"}
