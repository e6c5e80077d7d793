"""errors.retry.* values Kafka's ConnectorConfig accepts without a validator, and what its
RetryWithToleranceOperator does with them: a negative timeout retries without end, a maximum
delay of 0 or less ends the retrying at the first retry (Kafka's backoff throws there, so the
record fails as if not retried)."""

from __future__ import annotations

import sys
import time

import pytest

from isolation.host import HOSTSIDE_DIR

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_errors import ErrorPolicy, retry_backoff_s  # noqa: E402


@pytest.mark.parametrize("timeout", [-1, -5])
def test_a_negative_retry_timeout_retries_without_end(timeout: int) -> None:
    policy = ErrorPolicy({"errors.retry.timeout": timeout, "errors.retry.delay.max.ms": 100})
    long_ago = time.monotonic() - 3600
    assert policy.retries_left(long_ago, 50) == pytest.approx(0.1, abs=0.011)


@pytest.mark.parametrize("max_delay", [0, -1])
def test_a_maximum_delay_of_zero_or_less_is_not_retried(max_delay: int) -> None:
    policy = ErrorPolicy({"errors.retry.timeout": -1, "errors.retry.delay.max.ms": max_delay})
    assert policy.retries_left(time.monotonic(), 1) is None
    assert retry_backoff_s(1, max_delay) == 0.0  # the put()/poll() loops never sleep < 0
