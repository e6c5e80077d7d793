"""Property-based fuzzing of /openapi.json with schemathesis: no 5xx, no off-schema response."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

# Examples per operation: ~30 operations x 20 keeps the run well under a minute.
MAX_EXAMPLES = 20


@pytest.fixture
def worker(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    levels = {
        name: lg.level
        for name, lg in logging.root.manager.loggerDict.items()
        if isinstance(lg, logging.Logger)
    }
    root_level = logging.getLogger().level
    with RestWorker(tmp_path, bootstrap_servers, bundled_plugin_path) as running:
        yield running
    # the fuzzer sets random loggers to random levels: put this process's logging back
    logging.getLogger().setLevel(root_level)
    for name, lg in logging.root.manager.loggerDict.items():
        if isinstance(lg, logging.Logger):
            lg.setLevel(levels.get(name, logging.NOTSET))


def test_openapi_fuzz_finds_no_server_error_or_schema_violation(worker: RestWorker) -> None:
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    schema = schemathesis.openapi.from_url(worker.url + "/openapi.json")
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
    ]
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 28
    failures: list[str] = []
    calls = 0
    for operation in operations:

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def fuzz(case: schemathesis.Case) -> None:
            nonlocal calls
            response = case.call_and_validate(base_url=worker.url, checks=checks)
            calls += response is not None

        try:
            fuzz()
        except Exception as exc:  # noqa: BLE001 - collect every operation's failure
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert not failures, "\n\n".join(failures)
    # The fuzzer really talked to the worker (counted here: it sets log levels at random,
    # so the worker's access log cannot be relied on).
    assert calls > 10 * len(operations), calls
