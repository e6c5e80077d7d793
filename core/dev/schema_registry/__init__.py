"""A development Schema Registry speaking Confluent's REST API, stored in a Kafka topic.

Started by the project like the dev broker: ``copycat schema-registry --bootstrap-servers
HOST:PORT --port 8081``, or in tests through the ``schema_registry`` fixture. Converters
(``copycat-avro``'s AvroConverter) and users talk to it exactly as to Confluent's.

* :class:`SchemaRegistry`: replays ``_schemas`` and serves the API (FastAPI + uvicorn).
* :mod:`.compat`: compatibility levels over the Avro library's reader/writer checker.
* :class:`BasicAuth`: optional HTTP basic authentication (``--basic-auth``), as Confluent's
  ``authentication.method=BASIC``.
"""

from __future__ import annotations

from core.dev.schema_registry._auth import BasicAuth, BasicAuthError
from core.dev.schema_registry.server import SchemaRegistry, SchemaRegistryStartError

__all__ = ["BasicAuth", "BasicAuthError", "SchemaRegistry", "SchemaRegistryStartError"]
