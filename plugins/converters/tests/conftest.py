"""The Connect schema and value strategies of the fast-path property tests, shared by the
converter, transform and Avro plugins, live in ``tests/strategies/connect_strategies.py``: a
directory of its own, so that no module of ``tests/support`` shadows an installed one."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "strategies"))
