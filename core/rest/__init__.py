"""The Kafka Connect REST API (FastAPI), served by uvicorn from every worker."""

from core.rest.app import create_app
from core.rest.server import RestServer

__all__ = ["RestServer", "create_app"]
