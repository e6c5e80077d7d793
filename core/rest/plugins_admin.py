"""Admin endpoints for plugins: install into and remove from a running worker's plugin.path.

Served where ``/admin/loggers`` is (``admin.listeners``, or the main listeners when that is
unset; an empty ``admin.listeners`` turns them off) and behind the same REST extensions
(basic auth). Handlers are plain ``def``: FastAPI runs them on its threadpool, so an install
that takes seconds never blocks the event loop or other requests. The worker needs no restart:
its plugin catalogue is live, and is refreshed right after each change here.

* ``GET /admin/plugins``: every plugin location, how it was made, its lock, its plugins and
  which running connectors use it.
* ``POST /admin/plugins`` ``{"requirement": "NAME[==V]", "index_url": ...}``: install (201),
  only from one of the worker's ``plugin.index.urls`` (none configured: refused), and only a
  plain requirement: a path or a URL would let a REST caller bring code from elsewhere (400).
* ``DELETE /admin/plugins/{name}[?version=V]``: remove; refused with 409 naming the
  connectors on this worker that use it, with their states.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from core.herder import BadRequestError, ConflictError, Herder, NotFoundError
from core.rest.models import ErrorMessage
from core.worker_config import WorkerConfig


class InstallRequest(BaseModel):
    requirement: str | None = None
    index_url: str | None = None
    replace: bool = False


class Removed(BaseModel):
    removed: list[str]


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorMessage, "description": "Error"} for code in (*codes, 500)}


def _index(config: WorkerConfig, requested: str | None) -> str:
    """The index an install may use: one of ``plugin.index.urls`` (a REST caller must not make
    the worker fetch code from anywhere it likes)."""
    allowed = [u for u in (config.get("plugin.index.urls") or []) if u]
    if not allowed:
        raise BadRequestError(
            "installing plugins through REST is disabled: this worker has no plugin.index.urls"
        )
    if requested is None:
        return str(allowed[0])
    if requested not in allowed:
        raise BadRequestError(
            f"index {requested!r} is not one of this worker's plugin.index.urls: "
            + ", ".join(allowed)
        )
    return requested


def _plugin_paths(config: WorkerConfig) -> list[Path]:
    return [Path(p) for p in config.plugin_path or ["plugins.d"]]


def _refresh(herder: Herder) -> None:
    catalogue = getattr(herder, "catalogue", None)
    if catalogue is not None:
        catalogue.refresh(force=True)


def router(herder: Herder, config: WorkerConfig, route_class: Any) -> APIRouter:
    r = APIRouter(route_class=route_class, tags=["admin"])

    @r.get("/admin/plugins", response_model=list[dict[str, Any]], responses=_errors())
    def list_plugins() -> Any:
        from registry import scan
        from registry.manage import describe

        used = herder.plugins_in_use()
        rows = []
        for env in scan(_plugin_paths(config)):
            row = describe(env)
            row["used_by"] = used.get(row["location"], [])
            rows.append(row)
        return JSONResponse(rows)

    @r.post(
        "/admin/plugins",
        status_code=201,
        response_model=dict[str, Any],
        responses=_errors(400),
    )
    def install_plugin(body: InstallRequest = Body(...)) -> Any:
        from registry import install
        from registry.installer import PluginInstallError, plain_requirement
        from registry.manage import describe

        if not body.requirement or not body.requirement.strip():
            raise BadRequestError("'requirement' (e.g. \"my-plugin==1.0\") is required")
        index_url = _index(config, body.index_url)
        try:
            requirement = plain_requirement(body.requirement)
        except PluginInstallError as exc:
            raise BadRequestError(
                f"{exc}; installs through REST come only from this worker's "
                "plugin.index.urls (install files and URLs with `copycat plugins install`)"
            ) from exc
        try:
            env = install(
                requirement,
                _plugin_paths(config)[0],
                index_url=index_url,
                replace=body.replace,
                requirement_only=True,
                replace_hint='"replace": true in the request body',
            )
        except PluginInstallError as exc:
            raise BadRequestError(str(exc)) from exc
        _refresh(herder)
        return JSONResponse(describe(env), status_code=201)

    def _state(connector: str) -> str:
        """``name (STATE)``, with the states of tasks not running: what an operator checks
        before deleting a connector."""
        try:
            status = herder.connector_status(connector)
        except Exception:  # noqa: BLE001 - deleted meanwhile: named without a state
            return connector
        tasks = [
            f"task {t['id']} {t['state']}"
            for t in status.get("tasks", [])
            if t["state"] != "RUNNING"
        ]
        return f"{connector} ({', '.join([status['connector']['state'], *tasks])})"

    @r.delete("/admin/plugins/{name}", response_model=Removed, responses=_errors(404, 409))
    def remove_plugin(name: str, version: str | None = Query(default=None)) -> Any:
        from registry import find, remove

        spec = f"{name}=={version}" if version else name
        paths = _plugin_paths(config)
        hits = find(paths, spec)
        if not hits:
            raise NotFoundError(f"no installed plugin matches {spec!r}")
        used = herder.plugins_in_use()
        users = sorted({c for env in hits for c in used.get(str(env.location), [])})
        if users:
            raise ConflictError(
                f"cannot remove {spec}: used by connectors {', '.join(map(_state, users))} "
                "(their plugin hosts run from it, or start from it when restarted, FAILED ones "
                "too); delete them, or move them to another version first"
            )
        removed = remove(paths, spec)
        _refresh(herder)
        return JSONResponse({"removed": [str(env.location) for env in removed]})

    return r
