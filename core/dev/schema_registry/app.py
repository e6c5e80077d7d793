"""The REST API: the subset of Confluent Schema Registry's that converters and users need.

Paths, JSON shapes and error bodies (``{"error_code": 40401, "message": ...}``) follow
Confluent's API; only Avro schemas are supported (``schemaType`` other than ``AVRO`` is 42201).

Reads answer from memory on the event loop, holding the store's lock only for as long as
they read. Changes run in worker threads, one at a time: each is planned on the state, written
to ``_schemas`` and answered once the store's reader has applied it (see :mod:`._store`),
so a write waiting on a stalled broker never holds up a read.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from core.dev.schema_registry._auth import BasicAuth
from core.dev.schema_registry._state import (
    INVALID_COMPATIBILITY_LEVEL,
    INVALID_SCHEMA,
    STORE_ERROR,
    SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED,
    Record,
    RegistryError,
    RegistryState,
    config_key,
)
from core.dev.schema_registry._store import SchemaTopicStore, StoreError

__all__ = ["create_app"]

T = TypeVar("T")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def _answer(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status, media_type=CONTENT_TYPE)


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").lower() == "true"


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise RegistryError(50005, f"Unrecognized request body: {exc}") from exc
    if not isinstance(body, dict):
        raise RegistryError(50005, "Request body must be a JSON object")
    return body


def _schema_text(body: dict[str, Any]) -> str:
    schema_type = body.get("schemaType", "AVRO")
    if schema_type != "AVRO":
        raise RegistryError(
            INVALID_SCHEMA, f"Unsupported schema type {schema_type!r}; this registry serves AVRO"
        )
    if body.get("references"):
        raise RegistryError(INVALID_SCHEMA, "Schema references are not supported by this registry")
    text = body.get("schema")
    if not isinstance(text, str) or not text:
        raise RegistryError(INVALID_SCHEMA, "Empty schema")
    return text


def _level_in(body: dict[str, Any]) -> str:
    """The ``compatibility`` of a config update (Confluent's ConfigUpdateRequest)."""
    level = body.get("compatibility")
    if isinstance(level, str) and level:
        return level
    hint = (
        ' ("compatibilityLevel" is the name in the answers of GET /config; an update takes '
        '"compatibility")'
        if "compatibilityLevel" in body
        else ""
    )
    raise RegistryError(
        INVALID_COMPATIBILITY_LEVEL,
        f'Invalid compatibility level: the request has no "compatibility" field{hint}',
    )


_AUTH_MESSAGES = {401: "Unauthorized", 403: "Forbidden"}


def create_app(
    state: RegistryState,
    store: SchemaTopicStore,
    requests: Counter[str] | None = None,
    auth: BasicAuth | None = None,
) -> FastAPI:
    """Build the FastAPI app over ``state``, which ``store``'s reader keeps up to date.

    ``requests``, if given, counts the requests served by ``"METHOD /path"`` (so tests and
    operators can see how often clients such as converters ask the registry), refused ones
    included. ``auth``, if given, lets in only requests with its credentials (every path):
    else 401 with ``WWW-Authenticate``, or 403 for a user without an allowed role.
    """
    app = FastAPI(
        title="Copycat dev Schema Registry", openapi_url=None, docs_url=None, redoc_url=None
    )

    if auth is not None:
        checker = auth
        challenge = f'Basic realm="{auth.realm}"'

        # Added before the counter, so it runs inside it: refused requests are counted too.
        @app.middleware("http")
        async def authenticate(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            refused = checker.check(request.headers.get("authorization"))
            if refused is None:
                return await call_next(request)
            answer = _answer({"error_code": refused, "message": _AUTH_MESSAGES[refused]}, refused)
            if refused == 401:
                answer.headers["WWW-Authenticate"] = challenge
            return answer

    if requests is not None:
        counts = requests

        @app.middleware("http")
        async def count_requests(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            counts[f"{request.method} {request.url.path}"] += 1
            return await call_next(request)

    lock = store.lock
    writing = threading.Lock()

    def change(plan: Callable[[], tuple[T, list[Record]]]) -> T:
        """Plan a change on the current state, persist it, wait until it is applied."""
        if not writing.acquire(timeout=store.write_timeout_s):
            raise RegistryError(
                STORE_ERROR,
                "Error in the backend data store: another change is still waiting for "
                f"{store.bootstrap_servers}",
            )
        try:
            store.wait_settled()
            with lock:
                result, records = plan()
            store.write(records)
            return result
        except StoreError as exc:
            raise RegistryError(STORE_ERROR, str(exc)) from exc
        finally:
            writing.release()

    async def run_change(plan: Callable[[], tuple[T, list[Record]]]) -> T:
        return await run_in_threadpool(change, plan)

    @app.exception_handler(RegistryError)
    async def registry_error(_request: Request, exc: RegistryError) -> JSONResponse:
        return _answer({"error_code": exc.error_code, "message": exc.message}, exc.status)

    @app.get("/")
    async def root() -> JSONResponse:
        return _answer({})

    @app.get("/schemas/types")
    async def schema_types() -> JSONResponse:
        return _answer(["AVRO"])

    @app.get("/subjects")
    async def subjects(request: Request) -> JSONResponse:
        with lock:
            return _answer(state.subject_names(_flag(request, "deleted")))

    @app.post("/subjects/{subject}/versions")
    async def register(subject: str, request: Request) -> JSONResponse:
        text = _schema_text(await _json_body(request))
        with lock:
            state.parse(text)  # an invalid schema is 42201 even while the broker is away
        planned = await run_change(lambda: state.register(subject, text))
        with lock:
            # The id the topic gave the schema once applied (the planned one, unless another
            # registry writing the same topic got there first).
            found = state.find(subject, text)
        return _answer({"id": found.id if found is not None else planned})

    @app.post("/subjects/{subject}")
    async def lookup(subject: str, request: Request) -> JSONResponse:
        text = _schema_text(await _json_body(request))
        with lock:
            state.parse(text)
            deleted = _flag(request, "deleted")
            state.require_subject(subject, deleted)
            found = state.find(subject, text, deleted)
            if found is None:
                raise RegistryError(40403, "Schema not found")
            return _answer(found.as_json())

    @app.get("/subjects/{subject}/versions")
    async def versions(subject: str, request: Request) -> JSONResponse:
        with lock:
            return _answer(
                [v.version for v in state.require_subject(subject, _flag(request, "deleted"))]
            )

    @app.get("/subjects/{subject}/versions/{version}")
    async def get_version(subject: str, version: str, request: Request) -> JSONResponse:
        with lock:
            return _answer(state.get_version(subject, version, _flag(request, "deleted")).as_json())

    @app.get("/subjects/{subject}/versions/{version}/schema")
    async def get_version_schema(subject: str, version: str) -> JSONResponse:
        with lock:
            return _answer(json.loads(state.get_version(subject, version).schema))

    @app.delete("/subjects/{subject}")
    async def delete_subject(subject: str, request: Request) -> JSONResponse:
        permanent = _flag(request, "permanent")
        return _answer(await run_change(lambda: state.delete_subject(subject, permanent)))

    @app.delete("/subjects/{subject}/versions/{version}")
    async def delete_version(subject: str, version: str, request: Request) -> JSONResponse:
        permanent = _flag(request, "permanent")
        return _answer(await run_change(lambda: state.delete_version(subject, version, permanent)))

    @app.get("/schemas/ids/{schema_id}")
    async def schema_by_id(schema_id: int) -> JSONResponse:
        with lock:
            text = state.by_id.get(schema_id)
        if text is None:
            raise RegistryError(40403, "Schema not found")
        return _answer({"schema": text})

    def _versions_of(schema_id: int, include_deleted: bool) -> list[dict[str, Any]]:
        with lock:
            if schema_id not in state.by_id:
                raise RegistryError(40403, "Schema not found")
            return [
                {"subject": v.subject, "version": v.version}
                for subject in sorted(state.subjects)
                for v in state.live_versions(subject, include_deleted)
                if v.id == schema_id
            ]

    @app.get("/schemas/ids/{schema_id}/versions")
    async def schema_versions(schema_id: int, request: Request) -> JSONResponse:
        return _answer(_versions_of(schema_id, _flag(request, "deleted")))

    @app.get("/schemas/ids/{schema_id}/subjects")
    async def schema_subjects(schema_id: int, request: Request) -> JSONResponse:
        found = _versions_of(schema_id, _flag(request, "deleted"))
        return _answer(sorted({v["subject"] for v in found}))

    @app.get("/config")
    async def get_global_config() -> JSONResponse:
        with lock:
            return _answer({"compatibilityLevel": state.global_level})

    def _set_level(subject: str | None, level: str) -> tuple[str, list[Record]]:
        records = state.set_level(subject, level)
        return records[0][1]["compatibilityLevel"], records  # type: ignore[index]

    @app.put("/config")
    async def put_global_config(request: Request) -> JSONResponse:
        level = _level_in(await _json_body(request))
        return _answer({"compatibility": await run_change(lambda: _set_level(None, level))})

    @app.get("/config/{subject}")
    async def get_subject_config(subject: str, request: Request) -> JSONResponse:
        with lock:
            level = state.subject_levels.get(subject)
            if level is None:
                if not _flag(request, "defaultToGlobal"):
                    raise RegistryError(
                        SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED,
                        f"Subject '{subject}' does not have subject-level compatibility configured",
                    )
                level = state.global_level
        return _answer({"compatibilityLevel": level})

    @app.put("/config/{subject}")
    async def put_subject_config(subject: str, request: Request) -> JSONResponse:
        level = _level_in(await _json_body(request))
        return _answer({"compatibility": await run_change(lambda: _set_level(subject, level))})

    @app.delete("/config/{subject}")
    async def delete_subject_config(subject: str) -> JSONResponse:
        def plan() -> tuple[str, list[Record]]:
            return state.level_for(subject), [(config_key(subject), None)]

        return _answer({"compatibilityLevel": await run_change(plan)})

    @app.post("/compatibility/subjects/{subject}/versions/{version}")
    async def check_compatibility(subject: str, version: str, request: Request) -> JSONResponse:
        text = _schema_text(await _json_body(request))
        with lock:
            if version in ("latest", "-1") and not state.live_versions(subject):
                problems: list[str] = []
                state.parse(text)
            elif version in ("latest", "-1"):
                problems = state.incompatibilities(subject, text)
            else:
                problems = state.incompatibilities(
                    subject, text, [state.get_version(subject, version)]
                )
        body: dict[str, Any] = {"is_compatible": not problems}
        if _flag(request, "verbose"):
            body["messages"] = problems
        return _answer(body)

    return app
