"""The Connect schema and value strategies of the fast-path property tests live in
``tests/support/connect_strategies.py``, shared by the converter and transform plugins."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "support"))
