"""The two HostChannel implementations honour one contract (isolation/channel.py).

Each test runs on a real plugin host process and on the in-process twin: answers, plugin
errors as data, deadlines, a kill from another thread while a request waits, and connector
events sent from a plugin's own thread.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from isolation import (
    HostClient,
    InProcessHost,
    PluginHost,
    PluginHostCrashed,
    PluginHostTimeout,
    RemotePluginError,
    RemoteRetriableError,
)
from isolation.protocol import RAISE_ERROR, REQUEST_TASK_RECONFIGURATION, ConnectorEvent
from tests.support.wheels import build_zipapp

CALL_TIMEOUT_S = 2.0

PROBE = """
import threading
from plugin_api import ConfigDef, ConnectException, RetriableException, SourceConnector


def raise_retriable():
    raise RetriableException("try again later")


class Sleeper:
    def nap(self, seconds):
        import time
        time.sleep(seconds)


class EventProbe(SourceConnector):
    def version(self):
        return "1.0"

    def start(self, props):
        def later():
            self.context.request_task_reconfiguration()
            self.context.raise_error(ConnectException("probe failure"))

        threading.Thread(target=later).start()

    def task_class(self):
        raise NotImplementedError

    def task_configs(self, max_tasks):
        return []

    def stop(self):
        pass

    def config(self):
        return ConfigDef()
"""


@pytest.fixture(scope="module")
def probe_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("probe") / "channel_probe.pyz"
    return build_zipapp(out, "channel-probe", "1.0", {"channel_probe.py": PROBE}, {})


def _make(kind: str, events: list[ConnectorEvent]) -> HostClient:
    if kind == "process":
        channel: PluginHost | InProcessHost = PluginHost(
            sys.executable,
            name="contract",
            isolated_site=True,
            call_timeout_s=CALL_TIMEOUT_S,
            on_event=events.append,
        )
    else:
        channel = InProcessHost(
            name="contract", call_timeout_s=CALL_TIMEOUT_S, on_event=events.append
        )
    channel.start()
    return HostClient(channel)


@pytest.fixture(params=["process", "in-process"])
def host(
    request: pytest.FixtureRequest, probe_zip: Path
) -> Iterator[tuple[HostClient, list[ConnectorEvent]]]:
    events: list[ConnectorEvent] = []
    client = _make(request.param, events)
    client.attach(str(probe_zip))
    try:
        yield client, events
    finally:
        client.close(2.0)


def test_answers_come_back_as_sent(host: tuple[HostClient, list[ConnectorEvent]]) -> None:
    client, _ = host
    assert client.eval("builtins:len", [1, 2, 3]) == 3
    batch = [(i, b"%06d" % i, None) for i in range(1000)]
    assert client.eval("builtins:list", batch) == batch


def test_plugin_errors_arrive_as_data_with_their_kind(
    host: tuple[HostClient, list[ConnectorEvent]],
) -> None:
    client, _ = host
    with pytest.raises(RemotePluginError) as info:
        client.eval("builtins:int", "not a number")
    assert info.value.remote_type == "builtins.ValueError"
    assert "not a number" in info.value.remote_message
    assert "Traceback" in info.value.remote_traceback
    with pytest.raises(RemoteRetriableError, match="try again later"):
        client.eval("channel_probe:raise_retriable")
    assert client.eval("builtins:len", "still usable") == 12


def test_a_call_past_its_deadline_fails_and_the_host_is_done(
    host: tuple[HostClient, list[ConnectorEvent]],
) -> None:
    client, _ = host
    started = time.monotonic()
    with pytest.raises(PluginHostTimeout, match="did not complete within"):
        client.eval("time:sleep", 30)
    assert time.monotonic() - started < CALL_TIMEOUT_S + 3
    with pytest.raises(PluginHostTimeout):
        client.eval("builtins:len", "")


def test_a_hung_call_is_reported_by_the_method_it_called(
    host: tuple[HostClient, list[ConnectorEvent]],
) -> None:
    """A plugin method that hangs or dies is named in the message ("call" said nothing)."""
    client, _ = host
    handle = client.new("channel_probe:Sleeper")
    with pytest.raises(PluginHostTimeout, match="nap did not complete within"):
        client.call(handle, "nap", 30)


def test_a_kill_from_another_thread_reaches_the_waiter_with_its_reason(
    host: tuple[HostClient, list[ConnectorEvent]],
) -> None:
    client, _ = host
    killer = threading.Timer(0.3, lambda: client.kill("reclaimed by the test"))
    killer.start()
    with pytest.raises(PluginHostCrashed, match="reclaimed by the test"):
        client.eval("time:sleep", 30)


def test_connector_events_arrive_from_the_plugins_own_threads(
    host: tuple[HostClient, list[ConnectorEvent]],
) -> None:
    client, events = host
    handle = client.new("channel_probe:EventProbe")
    client.call(handle, "start", {})
    deadline = time.monotonic() + 10
    while len(events) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    kinds = [e.kind for e in events]
    assert kinds == [REQUEST_TASK_RECONFIGURATION, RAISE_ERROR]
    assert all(e.handle == handle for e in events)
    error = events[1].error
    assert error is not None and error.message == "probe failure"


def test_a_host_starts_and_answers_when_the_worker_holds_over_1024_files(
    probe_zip: Path,
) -> None:
    """A worker with ~70 connectors holds more than 1024 descriptors: a new host's pipes get
    numbers select() cannot take ("filedescriptor out of range in select()")."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1200
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.fail(f"this test needs {wanted} open files; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    held: list[int] = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        client = _make("process", [])
        try:
            assert client.eval("builtins:len", [1, 2, 3]) == 3
        finally:
            client.close(2.0)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
