"""Servers for development only: the embedded dev broker and the dev Schema Registry.

Neither is a production component: the dev broker (Tansu) keeps data in memory and lacks
compaction and transactions' isolation (see docs/architecture.md), and the Schema Registry is
a minimal Confluent-compatible one. The process bootstrap (:mod:`core.bootstrap`) and the CLI
start them; a herder never does.
"""

from __future__ import annotations

__all__: list[str] = []
