"""``copycat``'s arguments: ``--log-level`` and the standalone command's usage."""

from __future__ import annotations

import logging

import pytest

from core.cli import build_parser
from core.log_levels import OFF, TRACE

# Kafka's level names (as /admin/loggers takes them) and Python's WARNING, in any case.
LEVELS = {
    "TRACE": TRACE,
    "debug": logging.DEBUG,
    "Info": logging.INFO,
    "WARN": logging.WARNING,
    "warning": logging.WARNING,
    "ERROR": logging.ERROR,
    "fatal": logging.CRITICAL,
    "OFF": OFF,
}


@pytest.mark.parametrize(("name", "level"), LEVELS.items())
def test_log_level_takes_kafkas_names_before_the_command(name: str, level: int) -> None:
    args = build_parser().parse_args(["--log-level", name, "standalone", "w.properties"])
    assert args.log_level == level


@pytest.mark.parametrize(("name", "level"), LEVELS.items())
def test_log_level_is_taken_after_the_command_too(name: str, level: int) -> None:
    """``copycat standalone --log-level DEBUG ...`` used to fail: "unrecognized arguments"."""
    args = build_parser().parse_args(["standalone", "--log-level", name, "w.properties", "c"])
    assert args.log_level == level
    assert args.connector_configs == ["c"]
    args = build_parser().parse_args(["distributed", "w.properties", "--log-level", name])
    assert args.log_level == level
    args = build_parser().parse_args(["plugins", "list", "--log-level", name])
    assert args.log_level == level


def test_log_level_after_the_command_wins_and_info_is_the_default() -> None:
    parser = build_parser()
    assert parser.parse_args(["standalone", "w.properties"]).log_level == logging.INFO
    args = parser.parse_args(["--log-level", "ERROR", "standalone", "--log-level", "TRACE", "w"])
    assert args.log_level == TRACE


@pytest.mark.parametrize("value", ["VERBOSE", "", "WARNINGS", "10"])
def test_an_unknown_log_level_is_refused_naming_the_value(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to mean INFO, silently."""
    for argv in (
        ["--log-level", value, "standalone", "w.properties"],
        ["standalone", "--log-level", value, "w.properties"],
    ):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(argv)
        assert exited.value.code == 2
        error = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"argument --log-level: invalid choice: {value!r}" in error, error
        assert "TRACE, DEBUG, INFO, WARN, WARNING, ERROR, FATAL, OFF" in error, error


def test_standalone_without_arguments_names_only_the_worker_file_as_required(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Connector files are optional (connectors can be created over REST); the error used to
    say "required: worker.properties, connector.properties"."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["standalone"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        "copycat standalone: error: the following arguments are required: worker.properties"
    )
    assert "worker.properties [connector.properties ...]" in err  # the usage line
    assert build_parser().parse_args(["standalone", "w"]).connector_configs == []
