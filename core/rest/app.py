"""The Kafka Connect REST API as a FastAPI app: same paths, shapes, status codes and errors.

Handlers are plain ``def`` functions, so FastAPI runs them on its threadpool and a slow herder
call (starting a connector) never blocks the event loop; the two internal endpoints are
``async`` to read the raw body their signature covers, and call the herder on the threadpool.
Every error, including FastAPI's own request validation errors and unknown paths, is
``{"error_code": N, "message": "..."}``; an unexpected exception becomes a 500 in that shape
and its trace goes to the log only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Body, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from core import prometheus, secrets
from core.herder import (
    BadRequestError,
    Herder,
    HerderError,
    NotFoundError,
    NotLeaderError,
    TargetState,
    normalized_plugin_name,
)
from core.http_headers import (
    ALLOW_METHODS_KEY,
    ALLOW_ORIGIN_KEY,
    RESPONSE_HEADERS_KEY,
    origin_patterns,
    parse_rules,
)
from core.log_levels import parse_level
from core.metrics import Metrics
from core.rest import forwarding, loggers, media, plugins_admin
from core.rest import models as m
from core.rest.cors import AnswerHead, AnswerOptions, CrossOrigin, ResponseHeaders
from core.rest.limits import REQUEST_MAX_BYTES_KEY, BodySizeLimit
from core.rest.trailing_slash import TrailingSlash
from core.worker_config import WorkerConfig
from plugin_api import ConfigException, ConnectException

log = logging.getLogger("copycat.rest")

# KIP-1017: how long /health waits for the herder before calling the worker unhealthy.
HEALTH_CHECK_TIMEOUT_S = 10.0
# Kafka's WorkerStatus messages, by status (KIP-1017).
_HEALTH = {
    "healthy": (200, "Worker has completed startup and is ready to handle requests."),
    "starting": (503, "Worker is still starting up."),
    "unhealthy": (
        500,
        "Worker was unable to handle this request and may be unable to handle other requests.",
    ),
}
_HTTP_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


# Where an error message starts quoting output rather than saying what failed: a crashed plugin
# host's report ends with its last output (often a stack trace), and a 500 is "the error shape,
# never a stack trace" (docs/rest.md). The log keeps the whole message.
_QUOTED_OUTPUT_MARKERS = ("; last output:\n", "\nTraceback (most recent call last):")


def _without_trace(message: str) -> str:
    """A 500's message up to where it would quote output or a stack trace."""
    for marker in _QUOTED_OUTPUT_MARKERS:
        message = message.split(marker, 1)[0]
    if '\n  File "' in message:  # a trace without its header line: keep what precedes it
        message = message.split('\n  File "', 1)[0]
    return message


def error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    # A message may quote plugin text, and plugin text may quote a resolved secret.
    message = secrets.scrub(message)
    if status >= 500:
        message = _without_trace(message)
    return JSONResponse(
        {"error_code": status, "message": message}, status_code=status, headers=dict(headers or {})
    )


def _errors(*codes: int, consumes_json: bool = True) -> dict[int | str, dict[str, Any]]:
    # Every request: 406 (Accept), 413 (the body limit); 415 (Content-Type) where JSON is read.
    common = (406, 413, 415, 500) if consumes_json else (406, 413, 500)
    return {
        code: {"model": m.ErrorMessage, "description": _HTTP_REASONS.get(code, "Error")}
        for code in (*codes, *common)
    }


def _flag(request: Request, name: str, default: bool) -> bool:
    """A boolean query parameter as Kafka's Jersey reads it: ``Boolean.parseBoolean`` (only
    "true", any case, nothing around it: " true" is false) of its first value, where FastAPI
    would take the last. The route still declares it (a string) for the OpenAPI document."""
    values = request.query_params.getlist(name)
    return default if not values else values[0].lower() == "true"


class _SafeRoute(APIRoute):
    """Turns every exception a handler raises into the error shape (never a bare 500).

    Before the handler reads a body, refuses what Kafka's Jersey resources refuse: a
    Content-Type other than JSON (415) and an Accept that rules JSON out (406), see
    ``core.rest.media``.
    """

    consumes_json = True  # Kafka's @Consumes(APPLICATION_JSON)
    produces_text = False  # answers text/plain (GET /metrics), not JSON

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            headers = request.headers
            if self.consumes_json:
                content_type = headers.get("content-type")
                # Starlette caches the body: the handler reads these same bytes.
                read = content_type is None and self.body_field is not None
                body = read and bool(await request.body())
                if media.unsupported_content_type(content_type, body=body):
                    raise StarletteHTTPException(415)
            if (self.produces_text and media.not_acceptable_text(headers.get("accept"))) or (
                not self.produces_text and media.not_acceptable(headers.get("accept"))
            ):
                raise StarletteHTTPException(406)
            try:
                return await handler(request)
            except (StarletteHTTPException, RequestValidationError):
                raise
            except NotLeaderError as exc:  # distributed mode: another worker can serve it
                return await forwarding.forward(request, exc, error)
            except HerderError as exc:
                if exc.status >= 500:
                    log.warning("%s %s failed: %s", request.method, request.url.path, exc)
                return error(exc.status, str(exc))
            except ConfigException as exc:
                return error(400, str(exc))
            except ConnectException as exc:
                log.warning("%s %s failed: %s", request.method, request.url.path, exc)
                return error(500, str(exc))
            except OSError as exc:
                # The worker's own resources (open files, disk): what failed, not a class name.
                log.exception("%s %s failed", request.method, request.url.path)
                return error(500, f"The worker could not serve this request: {exc}")
            except Exception as exc:  # noqa: BLE001 - the trace goes to the log, not the client
                log.exception("%s %s failed", request.method, request.url.path)
                return error(500, f"Unexpected error: {type(exc).__name__}")

        return guarded


class _RootRoute(_SafeRoute):
    """Kafka's RootResource (``/``, ``/health``) declares no @Consumes: any Content-Type."""

    consumes_json = False


class _TextRoute(_RootRoute):
    """``GET /metrics``: Prometheus' text format, for an Accept that allows text/plain."""

    produces_text = True


def _config_map(raw: Any, *, keep_null: bool = False) -> dict[str, Any]:
    """A JSON object of config values as strings (Jackson coerces numbers and booleans too)."""
    if not isinstance(raw, dict):
        raise BadRequestError("Connector configuration must be a JSON object")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            if keep_null:
                out[key] = None
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            out[key] = str(value)
        else:
            raise BadRequestError(f"Connector configuration value of '{key}' must be a string")
    return out


def _refuse_nulls(herder: Herder, name: str, config: Mapping[str, str | None]) -> dict[str, str]:
    """A create's or config PUT's ``config`` without JSON nulls; with one, the config is first
    validated as Kafka does, so a null of a framework key or of a key no plugin defines is a
    400 ("Null value can not be supplied as the configuration value."). A null the validation
    passes (a key of the connector's own) is left out, as a PATCH's null is: Kafka stores it
    and the connector then fails to start.

    Raises:
        BadRequestError: the validation's errors, as Kafka lists them.
    """
    if None in config.values():
        herder.ensure_valid({**config, "name": name})
    return {key: value for key, value in config.items() if value is not None}


async def _verify_internal_request(herder: Herder, request: Request) -> None:
    """Have the herder check an internal request's signature (KIP-507) over its raw body.

    Raises:
        HerderError: 400, 403 or 503, as Kafka's DistributedHerder answers.
    """
    verify = getattr(herder, "verify_internal_request", None)
    if verify is not None:
        verify(await request.body(), request.headers)


def _connectors_router(herder: Herder) -> APIRouter:
    r = APIRouter(route_class=_SafeRoute, tags=["connectors"])

    @r.get(
        "/connectors",
        response_model=list[str] | dict[str, m.ExpandedConnector],
        responses=_errors(409),
    )
    def list_connectors(expand: list[str] = Query(default=[])) -> Any:
        names = herder.connectors()
        if not expand:
            return JSONResponse(names)
        # As Kafka: any expand parameter, even one naming no expansion (?expand=foo,
        # ?expand=), turns the list into the map; unknown expansions add nothing to it.
        wanted = [e for e in expand if e in ("status", "info")]
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            entry: dict[str, Any] = {}
            try:
                if "status" in wanted:
                    entry["status"] = herder.connector_status(name)
                if "info" in wanted:
                    entry["info"] = herder.connector_info(name)
            except NotFoundError:
                continue  # deleted while the response was built
            out[name] = entry
        return JSONResponse(out)

    @r.post(
        "/connectors", status_code=201, response_model=m.ConnectorInfo, responses=_errors(400, 409)
    )
    def create_connector(request: Request, body: m.CreateConnectorRequest = Body(...)) -> Any:
        config = _config_map(body.config if body.config is not None else {}, keep_null=True)
        # As Kafka: the name is the top-level one only; a "name" in the config must equal it
        # (the herder says they differ), so {"config": {"name": "x"}} alone is a 400.
        name = (body.name or "").strip()
        if not name and not config.get("name"):
            raise BadRequestError("Connector name cannot be empty")
        if body.config is None:
            raise BadRequestError("Connector configuration must be provided")
        try:
            # None when the request gives no initial_state: as Kafka, a distributed worker
            # then writes no target-state record (a connector without one is started).
            state = (
                None
                if body.initial_state is None
                else TargetState.from_initial_state(body.initial_state)
            )
        except ValueError as exc:
            raise BadRequestError(str(exc)) from None
        info = herder.create_connector(name, _refuse_nulls(herder, name, config), state)
        location = str(request.base_url).rstrip("/") + "/connectors/" + quote(name, safe="")
        return JSONResponse(info, status_code=201, headers={"Location": location})

    @r.get("/connectors/{connector}", response_model=m.ConnectorInfo, responses=_errors(404, 409))
    def get_connector(connector: str) -> Any:
        return JSONResponse(herder.connector_info(connector))

    @r.delete("/connectors/{connector}", status_code=204, responses=_errors(404, 409))
    def delete_connector(connector: str) -> Response:
        herder.delete_connector(connector)
        return Response(status_code=204)

    @r.get(
        "/connectors/{connector}/config", response_model=dict[str, str], responses=_errors(404, 409)
    )
    def get_config(connector: str) -> Any:
        return JSONResponse(herder.connector_config(connector))

    @r.put(
        "/connectors/{connector}/config",
        response_model=m.ConnectorInfo,
        responses={201: {"model": m.ConnectorInfo, "description": "Created"}, **_errors(400, 409)},
    )
    def put_config(request: Request, connector: str, config: dict[str, Any] = Body(...)) -> Any:
        props = _refuse_nulls(herder, connector, _config_map(config, keep_null=True))
        created, info = herder.put_connector_config(connector, props)
        if not created:
            return JSONResponse(info)
        location = str(request.base_url).rstrip("/") + "/connectors/" + quote(connector, safe="")
        return JSONResponse(info, status_code=201, headers={"Location": location})

    @r.patch(
        "/connectors/{connector}/config",
        response_model=m.ConnectorInfo,
        responses=_errors(400, 404, 409),
    )
    def patch_config(connector: str, patch: dict[str, Any] | None = Body(None)) -> Any:
        if patch is None:
            # A JSON null: Kafka looks the connector up first (404 for an unknown one, as
            # for any other patch), and only then fails on the missing patch.
            herder.connector_info(connector)
            raise BadRequestError("Connector configuration must be a JSON object")
        return JSONResponse(
            herder.patch_connector_config(connector, _config_map(patch, keep_null=True))
        )

    @r.get(
        "/connectors/{connector}/status",
        response_model=m.ConnectorStateInfo,
        responses=_errors(404, 409),
    )
    def get_status(connector: str) -> Any:
        return JSONResponse(herder.connector_status(connector))

    @r.get(
        "/connectors/{connector}/tasks",
        response_model=list[m.TaskInfo],
        responses=_errors(404, 409),
    )
    def get_tasks(connector: str) -> Any:
        return JSONResponse(herder.task_configs(connector))

    @r.post("/connectors/{connector}/tasks", status_code=204, include_in_schema=False)
    async def put_task_configs(
        request: Request, connector: str, configs: list[dict[str, Any]] = Body(...)
    ) -> Response:
        """Kafka's internal endpoint: a connector's worker sends the leader its task configs
        (distributed mode; the request is forwarded to the leader like any other). Signed by
        the sending worker (KIP-507): the herder checks the signature over the body's bytes
        before anything else."""
        receive = getattr(herder, "receive_task_configs", None)
        if receive is None:
            raise NotFoundError("Task configs are only accepted by distributed workers")
        await _verify_internal_request(herder, request)
        await run_in_threadpool(receive, connector, [_config_map(c) for c in configs])
        return Response(status_code=204)

    @r.put("/connectors/{connector}/fence", status_code=204, include_in_schema=False)
    async def fence_zombies(request: Request, connector: str) -> Response:
        """Kafka's internal endpoint (KIP-618): a worker about to start a connector's
        exactly-once tasks asks the leader to fence out their older generations (distributed
        mode; forwarded to the leader like any leader request). Signed as above."""
        fence = getattr(herder, "fence_zombies", None)
        if fence is None:
            raise NotFoundError("Zombie fencing is only done by distributed workers")
        await _verify_internal_request(herder, request)
        await run_in_threadpool(fence, connector)
        return Response(status_code=204)

    @r.get(
        "/connectors/{connector}/tasks/{task}/status",
        response_model=m.TaskState,
        responses=_errors(404, 409),
    )
    def get_task_status(connector: str, task: int) -> Any:
        return JSONResponse(herder.task_status(connector, task))

    @r.post(
        "/connectors/{connector}/tasks/{task}/restart", status_code=204, responses=_errors(404, 409)
    )
    def restart_task(connector: str, task: int) -> Response:
        herder.restart_task(connector, task)
        return Response(status_code=204)

    @r.post(
        "/connectors/{connector}/restart",
        status_code=204,
        responses={
            202: {"model": m.ConnectorStateInfo, "description": "Accepted"},
            **_errors(404, 409),
        },
    )
    def restart_connector(
        connector: str,
        request: Request,
        includeTasks: str | None = Query(default=None),  # noqa: N803 (read by _flag)
        onlyFailed: str | None = Query(default=None),  # noqa: N803 (read by _flag)
    ) -> Response:
        body = herder.restart_connector(
            connector,
            _flag(request, "includeTasks", False),
            _flag(request, "onlyFailed", False),
        )
        if body is None:
            return Response(status_code=204)
        return JSONResponse(body, status_code=202)

    @r.put("/connectors/{connector}/pause", status_code=202, responses=_errors(404, 409))
    def pause(connector: str) -> Response:
        herder.pause_connector(connector)
        return Response(status_code=202)

    @r.put("/connectors/{connector}/resume", status_code=202, responses=_errors(404, 409))
    def resume(connector: str) -> Response:
        herder.resume_connector(connector)
        return Response(status_code=202)

    @r.put("/connectors/{connector}/stop", status_code=204, responses=_errors(404, 409))
    def stop(connector: str) -> Response:
        herder.stop_connector(connector)
        return Response(status_code=204)

    @r.get(
        "/connectors/{connector}/offsets",
        response_model=m.ConnectorOffsets,
        responses=_errors(404, 409),
    )
    def get_offsets(connector: str) -> Any:
        return JSONResponse(herder.connector_offsets(connector))

    @r.patch(
        "/connectors/{connector}/offsets",
        response_model=m.Message,
        responses=_errors(400, 404, 409),
    )
    def alter_offsets(connector: str, body: m.ConnectorOffsets = Body(...)) -> Any:
        offsets = [o.model_dump() for o in body.offsets or []]
        if not offsets:  # before the connector is looked up, as Kafka's ConnectorsResource
            raise BadRequestError(
                "Partitions / offsets need to be provided for an alter offsets request"
            )
        return JSONResponse({"message": herder.alter_connector_offsets(connector, offsets)})

    @r.delete(
        "/connectors/{connector}/offsets",
        response_model=m.Message,
        responses=_errors(400, 404, 409),
    )
    def reset_offsets(connector: str) -> Any:
        return JSONResponse({"message": herder.reset_connector_offsets(connector)})

    @r.get(
        "/connectors/{connector}/topics",
        response_model=dict[str, m.ActiveTopics],
        responses=_errors(403, 404, 409),
    )
    def get_topics(connector: str) -> Any:
        return JSONResponse({connector: {"topics": herder.active_topics(connector)}})

    @r.put(
        "/connectors/{connector}/topics/reset", status_code=202, responses=_errors(403, 404, 409)
    )
    def reset_topics(connector: str) -> Response:
        herder.reset_active_topics(connector)
        return Response(status_code=202)

    return r


def _plugins_router(herder: Herder) -> APIRouter:
    r = APIRouter(route_class=_SafeRoute, tags=["connector-plugins"])

    @r.get("/connector-plugins", response_model=list[m.PluginInfo], responses=_errors())
    def list_plugins(
        request: Request,
        connectorsOnly: str | None = Query(default=None),  # noqa: N803 (read by _flag)
    ) -> Any:
        return JSONResponse(herder.plugins(_flag(request, "connectorsOnly", True)))

    @r.get(
        "/connector-plugins/{plugin}/config",
        response_model=list[m.ConfigKeyInfo],
        responses=_errors(400, 404),
    )
    def plugin_config(plugin: str, version: str | None = Query(default=None)) -> Any:
        return JSONResponse(herder.plugin_config(plugin, version))

    @r.put(
        "/connector-plugins/{plugin}/config/validate",
        response_model=m.ConfigInfos,
        responses=_errors(400),
    )
    def validate(plugin: str, config: dict[str, Any] = Body(...)) -> Any:
        props = _config_map(config, keep_null=True)
        included = props.get("connector.class")
        if included is not None and not normalized_plugin_name(included).endswith(
            normalized_plugin_name(plugin)
        ):
            raise BadRequestError(
                f"Included connector type {included} does not match request type {plugin}"
            )
        return JSONResponse(herder.validate_connector_config(props))

    return r


def _root_router(herder: Herder) -> APIRouter:
    r = APIRouter(route_class=_RootRoute, tags=["root"])

    @r.get("/", response_model=m.ServerInfo, responses=_errors(consumes_json=False))
    def server_info() -> Any:
        return JSONResponse(herder.server_info())

    @r.get(
        "/health",
        response_model=m.WorkerStatus,
        responses={
            503: {"model": m.WorkerStatus, "description": "Starting"},
            500: {"model": m.WorkerStatus, "description": "Unhealthy"},
        },
    )
    def health() -> Any:
        health = herder.health(HEALTH_CHECK_TIMEOUT_S)
        code, message = _HEALTH[health.status]
        if health.detail:
            message = f"{message} {health.detail}"  # as Kafka appends its stage
        return JSONResponse({"status": health.status, "message": message}, status_code=code)

    return r


def _metrics_router(herder: Herder) -> APIRouter:
    r = APIRouter(route_class=_TextRoute, tags=["root"])

    @r.get(
        "/metrics",
        response_class=PlainTextResponse,
        responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
    )
    def metrics() -> Any:
        """This worker's metrics in Prometheus' text exposition format 0.0.4 (each worker
        answers with its own, as each Kafka Connect worker has its own JMX metrics)."""
        registry: Metrics | None = getattr(herder, "metrics", None)
        if registry is None:
            return PlainTextResponse("", media_type=prometheus.CONTENT_TYPE)
        body = prometheus.render(registry.metrics(), registry.context)
        return PlainTextResponse(body, media_type=prometheus.CONTENT_TYPE)

    return r


def _loggers_router(herder: Herder) -> APIRouter:
    r = APIRouter(route_class=_SafeRoute, tags=["admin"])

    @r.get("/admin/loggers", response_model=dict[str, m.LoggerLevel], responses=_errors())
    def list_loggers() -> Any:
        return JSONResponse(loggers.all_levels())

    @r.get("/admin/loggers/{logger}", response_model=m.LoggerLevel, responses=_errors(404))
    def get_logger(logger: str) -> Any:
        found = loggers.level(logger)
        if found is None:
            raise NotFoundError(f"Logger {logger} not found.")
        return JSONResponse(found)

    @r.put(
        "/admin/loggers/{logger}",
        response_model=list[str],
        responses={204: {"description": "Set cluster-wide"}, **_errors(400, 404)},
    )
    def set_logger(
        logger: str, body: m.LevelRequest = Body(...), scope: str | None = Query(default=None)
    ) -> Any:
        if body.level is None:
            raise BadRequestError("Desired 'level' parameter was not specified in request.")
        value = parse_level(body.level)
        if value is None:
            raise NotFoundError(f"invalid log level '{body.level}'.")  # Kafka's status (sic)
        if scope is not None and scope.lower() not in ("worker", "cluster"):
            log.warning("ignoring invalid logger scope %r; using 'worker'", scope)
        cluster = scope is not None and scope.lower() == "cluster"
        to_cluster = getattr(herder, "set_cluster_logger_level", None)
        if cluster and to_cluster is not None:
            # Distributed: a record in the config topic, which every worker (this one
            # included) applies when it reads it (KAFKA-15428).
            to_cluster(logger, body.level)
            return Response(status_code=204)
        affected = loggers.set_level(logger, value)
        if cluster:
            return Response(status_code=204)  # one worker is the whole standalone cluster
        return JSONResponse(affected)

    return r


def _strip_422(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """OpenAPI without FastAPI's 422 entries: validation errors are answered as 400."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, routes=app.routes, description=app.description
            )
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    return openapi


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "Invalid request: " + "; ".join(parts)


def create_app(
    herder: Herder,
    worker_config: WorkerConfig,
    *,
    main: bool = True,
    admin: bool = True,
    extensions: Any = None,
) -> FastAPI:
    """The REST app of one listener: ``main`` routes, ``admin`` (/admin/loggers,
    /admin/plugins) routes or both.

    ``extensions`` is the worker's pluggy manager; its ``copycat_rest_extension`` hooks run
    last (authentication middleware and the like).
    """
    app = FastAPI(
        title="Copycat REST API (Kafka Connect compatible)",
        version="1",
        description="Kafka Connect's REST API. Errors are always "
        '{"error_code": <status>, "message": "..."}.',
        redirect_slashes=False,  # TrailingSlash serves the path itself; a 307 has no error shape
    )
    routers: list[APIRouter] = []
    if main:
        routers += [
            _root_router(herder),
            _metrics_router(herder),
            _connectors_router(herder),
            _plugins_router(herder),
        ]
    if admin:
        routers += [
            _loggers_router(herder),
            plugins_admin.router(herder, worker_config, _SafeRoute),
        ]
    for router in routers:
        app.include_router(router)
    forwarding.use_client(app, getattr(herder, "internal_http", None))
    app.openapi = _strip_422(app)  # type: ignore[method-assign]

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        if all(err.get("loc", ("",))[0] == "path" for err in exc.errors()):
            # A path that does not convert (a task id that is not a number) names no
            # resource: Jersey's 404, as Kafka answers it.
            return error(404, f"HTTP 404 {_HTTP_REASONS[404]}")
        return error(400, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        reason = _HTTP_REASONS.get(exc.status_code, str(exc.detail))
        return error(exc.status_code, f"HTTP {exc.status_code} {reason}", exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return error(500, f"Unexpected error: {type(exc).__name__}")

    # Inside the extensions: authentication applies to OPTIONS and HEAD too.
    routes = [route for r in routers for route in r.routes]
    app.add_middleware(AnswerOptions, routes=routes)
    app.add_middleware(AnswerHead, routes=routes)
    if extensions is not None:
        extensions.hook.copycat_rest_extension(app=app, worker_config=worker_config)
    app.add_middleware(TrailingSlash)  # outside the extensions: they see the routes' paths
    # Added last, so it is the outermost layer: no extension or handler reads a large body.
    app.add_middleware(
        BodySizeLimit,
        max_bytes=int(worker_config.get(REQUEST_MAX_BYTES_KEY)),
    )
    if main:  # Kafka sets both up on the main listeners' context only
        # Outside the body limit and authentication, as Jetty's handler and filter are
        # outside Jersey's: a 401 or a 413 carries them too.
        rules = parse_rules(worker_config.get(RESPONSE_HEADERS_KEY))
        if rules:
            app.add_middleware(ResponseHeaders, rules=rules)
        origins = origin_patterns(worker_config.get(ALLOW_ORIGIN_KEY))
        if origins is not None:
            app.add_middleware(
                CrossOrigin, origins=origins, methods=worker_config.get(ALLOW_METHODS_KEY) or ""
            )
    return app
