"""The REST API: the subset of Confluent Schema Registry's that converters and users need.

Paths, JSON shapes and error bodies (``{"error_code": 40401, "message": ...}``) follow
Confluent's API; only Avro schemas are supported (``schemaType`` other than ``AVRO`` is 42201).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from core.dev.schema_registry._state import (
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


def create_app(state: RegistryState, store: SchemaTopicStore) -> FastAPI:
    """Build the FastAPI app over ``state``, persisting every change through ``store``."""
    app = FastAPI(
        title="Copycat dev Schema Registry", openapi_url=None, docs_url=None, redoc_url=None
    )
    lock = threading.Lock()

    def commit(records: list[Record]) -> None:
        try:
            store.write(records)
        except StoreError as exc:
            raise RegistryError(STORE_ERROR, str(exc)) from exc
        for key, value in records:
            state.apply(key, value)

    @app.exception_handler(RegistryError)
    async def registry_error(_request: Request, exc: RegistryError) -> JSONResponse:
        return _answer({"error_code": exc.error_code, "message": exc.message}, exc.status)

    @app.get("/")
    def root() -> JSONResponse:
        return _answer({})

    @app.get("/schemas/types")
    def schema_types() -> JSONResponse:
        return _answer(["AVRO"])

    @app.get("/subjects")
    def subjects(request: Request) -> JSONResponse:
        with lock:
            return _answer(state.subject_names(_flag(request, "deleted")))

    @app.post("/subjects/{subject}/versions")
    async def register(subject: str, request: Request) -> JSONResponse:
        text = _schema_text(await _json_body(request))
        with lock:
            schema_id, records = state.register(subject, text)
            commit(records)
        return _answer({"id": schema_id})

    @app.post("/subjects/{subject}")
    async def lookup(subject: str, request: Request) -> JSONResponse:
        text = _schema_text(await _json_body(request))
        with lock:
            state.parse(text)
            state.require_subject(subject, _flag(request, "deleted"))
            found = state.find(subject, text)
            if found is None:
                raise RegistryError(40403, "Schema not found")
            return _answer(found.as_json())

    @app.get("/subjects/{subject}/versions")
    def versions(subject: str, request: Request) -> JSONResponse:
        with lock:
            return _answer(
                [v.version for v in state.require_subject(subject, _flag(request, "deleted"))]
            )

    @app.get("/subjects/{subject}/versions/{version}")
    def get_version(subject: str, version: str, request: Request) -> JSONResponse:
        with lock:
            return _answer(state.get_version(subject, version, _flag(request, "deleted")).as_json())

    @app.get("/subjects/{subject}/versions/{version}/schema")
    def get_version_schema(subject: str, version: str) -> JSONResponse:
        with lock:
            return _answer(json.loads(state.get_version(subject, version).schema))

    @app.delete("/subjects/{subject}")
    def delete_subject(subject: str, request: Request) -> JSONResponse:
        with lock:
            deleted, records = state.delete_subject(subject, _flag(request, "permanent"))
            commit(records)
        return _answer(deleted)

    @app.delete("/subjects/{subject}/versions/{version}")
    def delete_version(subject: str, version: str, request: Request) -> JSONResponse:
        with lock:
            deleted, records = state.delete_version(subject, version, _flag(request, "permanent"))
            commit(records)
        return _answer(deleted)

    @app.get("/schemas/ids/{schema_id}")
    def schema_by_id(schema_id: int) -> JSONResponse:
        with lock:
            text = state.by_id.get(schema_id)
        if text is None:
            raise RegistryError(40403, "Schema not found")
        return _answer({"schema": text})

    @app.get("/schemas/ids/{schema_id}/versions")
    def schema_versions(schema_id: int, request: Request) -> JSONResponse:
        include_deleted = _flag(request, "deleted")
        with lock:
            if schema_id not in state.by_id:
                raise RegistryError(40403, "Schema not found")
            found = [
                {"subject": v.subject, "version": v.version}
                for subject in sorted(state.subjects)
                for v in state.live_versions(subject, include_deleted)
                if v.id == schema_id
            ]
        return _answer(found)

    @app.get("/schemas/ids/{schema_id}/subjects")
    def schema_subjects(schema_id: int, request: Request) -> JSONResponse:
        response = schema_versions(schema_id, request)
        return _answer(sorted({v["subject"] for v in json.loads(bytes(response.body))}))

    @app.get("/config")
    def get_global_config() -> JSONResponse:
        with lock:
            return _answer({"compatibilityLevel": state.global_level})

    @app.put("/config")
    async def put_global_config(request: Request) -> JSONResponse:
        body = await _json_body(request)
        with lock:
            records = state.set_level(None, body.get("compatibility", ""))
            commit(records)
        return _answer({"compatibility": records[0][1]["compatibilityLevel"]})  # type: ignore[index]

    @app.get("/config/{subject}")
    def get_subject_config(subject: str, request: Request) -> JSONResponse:
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
        body = await _json_body(request)
        with lock:
            records = state.set_level(subject, body.get("compatibility", ""))
            commit(records)
        return _answer({"compatibility": records[0][1]["compatibilityLevel"]})  # type: ignore[index]

    @app.delete("/config/{subject}")
    def delete_subject_config(subject: str) -> JSONResponse:
        with lock:
            previous = state.level_for(subject)
            commit([(config_key(subject), None)])
        return _answer({"compatibilityLevel": previous})

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
