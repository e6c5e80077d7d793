"""Give these tests the repository's broker and registry fixtures.

pytest applies ``tests/conftest.py`` only to tests under ``tests/``, so its fixtures are
loaded here under another module name. Running ``plugins/avro`` together with ``tests/``
therefore starts a second (session) registry for these tests; the broker is the run's shared
Apache Kafka (or the dev broker with ``COPYCAT_TEST_BROKER=dev-broker``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_ROOT_CONFTEST = Path(__file__).resolve().parents[3] / "tests" / "conftest.py"
_spec = importlib.util.spec_from_file_location("copycat_root_fixtures", _ROOT_CONFTEST)
assert _spec is not None and _spec.loader is not None
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

dev_broker = _fixtures.dev_broker
apache_kafka = _fixtures.apache_kafka
broker = _fixtures.broker
schema_registry = _fixtures.schema_registry
topic_name = _fixtures.topic_name

# The Connect schema and value strategies of the fast-path property tests (shared).
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "strategies"))
