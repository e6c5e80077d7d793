"""Which credentials file the basic auth REST extension reads (core/rest/basic_auth.py): the
JAAS file is read as Java's ``ConfigFile`` reads it, and every refusal names what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.rest.basic_auth import CREDENTIALS_FILE, JAAS_CONFIG, credentials_file
from plugin_api import ConfigException

PFLM = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"


def _read(tmp_path: Path, text: str) -> Path:
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text(text)
    return credentials_file({JAAS_CONFIG: str(jaas)})


@pytest.mark.parametrize(
    "text",
    [
        f'// KafkaConnect {{ {PFLM} required file="/old"; }};\n'
        f'KafkaConnect {{ {PFLM} required file="/real"; }};',
        f'/* KafkaConnect {{ {PFLM} required file="/old"; }};\n */\n'
        f'KafkaConnect {{ {PFLM} required file="/real"; }};',
        f'MyKafkaConnect {{ {PFLM} required file="/my"; }};\n'
        f'KafkaConnect {{ {PFLM} required file="/real"; }};',
        f'KafkaConnect {{ {PFLM} REQUIRED debug=true file = "/real" ; }} ;',
        f'KafkaConnect {{\n  {PFLM} sufficient\n  file="/real";\n}};\n'
        f'KafkaConnect-other {{ {PFLM} required file="/other"; }};',
        f"KafkaConnect {{ {PFLM} required file='/real'; }};",
    ],
)
def test_the_kafka_connect_entry_is_the_one_read(tmp_path: Path, text: str) -> None:
    assert _read(tmp_path, text) == Path("/real")


def test_quoted_values_keep_spaces_and_escapes(tmp_path: Path) -> None:
    path = _read(tmp_path, f'KafkaConnect {{ {PFLM} required file="/a dir/c\\"s"; }};')
    assert path == Path('/a dir/c"s')


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('KafkaConnect { com.example.LdapLoginModule required file="/x"; };', "LdapLoginModule"),
        (f'KafkaClient {{ {PFLM} required file="/x"; }};', "no KafkaConnect entry"),
        (f'// KafkaConnect {{ {PFLM} required file="/x"; }};', "no KafkaConnect entry"),
        (f"KafkaConnect {{ {PFLM} required; }};", 'file="'),
        (f'KafkaConnect {{ {PFLM} always file="/x"; }};', "control flag"),
        (f'KafkaConnect {{ {PFLM} required file="/x" }};', "expected"),
        (
            f'KafkaConnect {{ {PFLM} required file="/x"; }};\n'
            f'KafkaConnect {{ {PFLM} required file="/y"; }};',
            "multiple entries for KafkaConnect",
        ),
        (
            f'KafkaConnect {{ {PFLM} required file="/x";\n  {PFLM} required file="/y"; }};',
            "2 login modules",
        ),
    ],
)
def test_a_jaas_file_copycat_cannot_use_is_refused_naming_why(
    tmp_path: Path, text: str, expected: str
) -> None:
    with pytest.raises(ConfigException, match=JAAS_CONFIG.replace(".", r"\.")) as refused:
        _read(tmp_path, text)
    assert expected in str(refused.value)


def test_kafka_opts_names_the_jaas_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jaas = tmp_path / "j.conf"
    jaas.write_text(f'KafkaConnect {{ {PFLM} required file="/real"; }};')
    monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1g -Djava.security.auth.login.config=={jaas}")
    assert credentials_file({}) == Path("/real")


def test_the_last_of_several_jaas_options_in_kafka_opts_wins_as_in_the_jvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, last = tmp_path / "first.conf", tmp_path / "last.conf"
    first.write_text(f'KafkaConnect {{ {PFLM} required file="/first"; }};')
    last.write_text(f'KafkaConnect {{ {PFLM} required file="/last"; }};')
    monkeypatch.setenv(
        "KAFKA_OPTS",
        f"-Xmx1g -Djava.security.auth.login.config={first} -Dfoo=bar "
        f"-Djava.security.auth.login.config={last}",
    )
    assert credentials_file({}) == Path("/last")


def test_without_any_file_the_error_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    with pytest.raises(ConfigException) as refused:
        credentials_file({})
    message = str(refused.value)
    assert "None" not in message
    assert CREDENTIALS_FILE in message and JAAS_CONFIG in message
    assert "java.security.auth.login.config" in message
