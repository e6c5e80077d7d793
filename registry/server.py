"""``copycat registry serve``: a private plugin index that pip, uv and twine use unchanged.

The index itself is pypiserver (see docs/architecture.md for why not devpi-server), serving
``<data>/plugins`` (validated uploads) and ``<data>/libraries`` (dependency wheels an operator
adds with ``copycat registry add``, so installs work air-gapped), with sha256 fragments on
every link so pip and uv verify what they download. In front of it, this module adds:

* **upload validation**: a ``twine upload`` (the legacy upload API, ``POST /``) is parsed here
  first; the wheel is validated (:mod:`registry.validation`) against the index's own files and
  only a valid one is handed on to pypiserver to store. A bad one is answered ``400`` with
  every reason, is never written, never listed. Sdists are refused (a plugin env is built
  from wheels only).
* **copycat-plugin-api in ``libraries``**: at start, this runtime's version is packed there if
  absent (:mod:`registry.api_wheel`), so plain pip and uv resolve a plugin's requirement on it.
* **an optional upstream** (``--upstream URL``, off by default): projects the index does not
  hold are redirected there (pypiserver's fallback) and upload validation may resolve
  dependencies from it. Off, the index is air-gapped: dependencies must be in ``libraries``.
  (On, a name missing locally resolves upstream: mind dependency confusion.)
* **upload auth**: a token (``twine -u __token__ -p TOKEN``, i.e. HTTP basic auth with that
  password; or ``Authorization: Bearer TOKEN``), or an htpasswd file through pypiserver's
  own support. Reading the index needs no account.
* **a catalogue API**: ``GET /api/plugins[?q=...]`` searches plugin names, versions,
  component kinds and class names (Kafka aliases too), descriptions, licences and config
  keys; ``GET /api/plugins/<name>`` gives every version with its components, config
  definitions, plugin_api range and support level.

Threads: a ``ThreadingWSGIServer`` serves each request on its own thread; uploads are validated
in parallel, but each is stored, and its catalogue entry written, under one lock, after checking
again that nothing has taken its place meanwhile. Catalogue entries are JSON files written
atomically, so readers never see a half-written one.
"""

from __future__ import annotations

import base64
import email.message
import email.parser
import hmac
import io
import json
import logging
import socketserver
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from plugin_api import ConnectException
from registry.api_wheel import ensure_plugin_api_wheel
from registry.validation import InvalidPluginError, validate_wheel

log = logging.getLogger("copycat.registry")

PLUGINS_DIR, LIBRARIES_DIR, CATALOGUE_DIR = "plugins", "libraries", "catalogue"
# Largest upload accepted, so a client cannot fill the server's memory with one request
# (plugin wheels are kilobytes to a few megabytes; bundled native libraries go to libraries/).
MAX_UPLOAD_BYTES = 256 * 1024 * 1024

# Longest reason phrase put into a status line; clients print it whole.
MAX_REASON_CHARS = 2000

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


def _json(start: StartResponse, status: str, body: Any) -> list[bytes]:
    data = json.dumps(body, indent=2).encode()
    start(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def _text(start: StartResponse, status: str, body: str, headers: Iterable[Any] = ()) -> list[bytes]:
    data = body.encode()
    start(
        status,
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))]
        + list(headers),
    )
    return [data]


def _refuse(
    start: StartResponse, code: int, message: str, headers: Iterable[Any] = ()
) -> list[bytes]:
    """Refuse an upload saying why in the status line too: twine prints only that line."""
    return _text(start, _status_line(code, message), message + "\n", headers)


def _status_line(code: int, message: str) -> str:
    """An HTTP status line carrying ``message`` as its reason: one line of printable ASCII."""
    flat = " ".join(message.split())
    flat = "".join(c if 32 <= ord(c) < 127 else "?" for c in flat)
    return f"{code} {flat[:MAX_REASON_CHARS]}"


class Catalogue:
    """The validated plugins of one index: one JSON entry per wheel under ``<data>/catalogue``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def add(self, entry: dict[str, Any]) -> None:
        path = self.directory / (entry["filename"] + ".json")
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(json.dumps(entry, indent=2, sort_keys=True))
        tmp.replace(path)

    def entries(self) -> list[dict[str, Any]]:
        out = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                out.append(json.loads(path.read_text()))
            except (OSError, ValueError) as exc:
                log.warning("skipping unreadable catalogue entry %s: %s", path, exc)
        return out

    def plugins(self, query: str = "") -> list[dict[str, Any]]:
        """One summary per plugin name (newest version first), filtered by ``query``.

        A plugin is found when any of its versions matches; its summary is still over all
        of them (the latest is the latest published, not the latest that matched).
        """
        by_name: dict[str, list[dict[str, Any]]] = {}
        for entry in self.entries():
            by_name.setdefault(canonicalize_name(entry["name"]), []).append(entry)
        out = []
        for name in sorted(by_name):
            if query and not any(_matches(e, query) for e in by_name[name]):
                continue
            versions = sorted(by_name[name], key=lambda e: _version_key(e["version"]), reverse=True)
            newest = versions[0]
            out.append(
                {
                    "name": newest["name"],
                    "latest": newest["version"],
                    # Once per version, though wheels for several platforms may hold it.
                    "versions": list(dict.fromkeys(e["version"] for e in versions)),
                    "summary": newest["summary"],
                    "licence": newest["licence"],
                    "support": newest["support"],
                    "plugin_api": newest["plugin_api"],
                    "components": [
                        {k: c[k] for k in ("class", "type", "version", "aliases")}
                        for c in newest["components"]
                    ],
                }
            )
        return out

    def plugin(self, name: str) -> list[dict[str, Any]]:
        wanted = canonicalize_name(name)
        found = [e for e in self.entries() if canonicalize_name(e["name"]) == wanted]
        return sorted(found, key=lambda e: _version_key(e["version"]), reverse=True)


def _version_key(version: str) -> tuple[int, Any]:
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def _matches(entry: dict[str, Any], query: str) -> bool:
    words = [w.lower() for w in query.split() if w]
    haystack = [entry["name"], entry["summary"], entry["licence"], entry["support"]]
    for component in entry["components"]:
        haystack += [component["class"], component["name"], component["type"]]
        haystack += component["aliases"]
        for definition in component.get("config", []):
            haystack += [definition.get("name", ""), definition.get("documentation") or ""]
    text = "\n".join(str(h) for h in haystack).lower()
    return all(w in text for w in words)


def _parse_form(environ: dict[str, Any], body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """``name -> (filename, content)`` of a multipart/form-data body (twine's upload)."""
    content_type = environ.get("CONTENT_TYPE", "")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser().parsebytes(head + body)
    fields: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        return fields
    for part in message.get_payload():
        if not isinstance(part, email.message.Message):
            continue
        name = part.get_param("name", header="content-disposition")
        if name is None:
            continue
        payload = part.get_payload(decode=True)
        filename = part.get_filename()
        fields[str(name)] = (
            str(filename) if filename else None,
            payload if isinstance(payload, bytes) else b"",
        )
    return fields


class RegistryApp:
    """The WSGI app: catalogue API and upload validation in front of pypiserver."""

    def __init__(
        self,
        data: Path,
        *,
        upload_token: str | None = None,
        htpasswd: Path | None = None,
        upstream: str | None = None,
    ) -> None:
        import pypiserver

        self.data = data
        self.plugins_dir = data / PLUGINS_DIR
        self.libraries_dir = data / LIBRARIES_DIR
        for d in (self.plugins_dir, self.libraries_dir):
            d.mkdir(parents=True, exist_ok=True)
        try:
            # Plain pip and uv users of the index resolve every plugin's requirement on it.
            ensure_plugin_api_wheel(self.libraries_dir)
        except ConnectException as exc:
            log.warning("%s; add one with `copycat registry add` for plain pip users", exc)
        self.catalogue = Catalogue(data / CATALOGUE_DIR)
        self.upload_token = upload_token
        self.htpasswd = htpasswd
        self.upstream = upstream
        self._upload_lock = threading.Lock()
        self.index: WsgiApp = pypiserver.app(
            roots=[str(self.plugins_dir), str(self.libraries_dir)],
            authenticate=[],
            password_file=".",
            disable_fallback=upstream is None,
            fallback_url=upstream or "https://pypi.org/simple/",
            hash_algo="sha256",
            overwrite=False,
        )
        self._htpasswd_check: Callable[[str, str], bool] | None = None
        if htpasswd is not None:
            from passlib.apache import HtpasswdFile

            loaded = HtpasswdFile(str(htpasswd))

            def check(user: str, password: str) -> bool:
                loaded.load_if_changed()
                return bool(loaded.check_password(user, password))

            self._htpasswd_check = check

    def __call__(self, environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        if path == "/api/plugins" or path == "/api/plugins/":
            query = parse_qs(environ.get("QUERY_STRING", "")).get("q", [""])[0]
            return _json(start, "200 OK", self.catalogue.plugins(query))
        if path.startswith("/api/plugins/"):
            found = self.catalogue.plugin(path[len("/api/plugins/") :].strip("/"))
            if not found:
                return _json(start, "404 Not Found", {"error": "no such plugin"})
            return _json(start, "200 OK", {"name": found[0]["name"], "versions": found})
        if method == "POST" and path in ("/", "/legacy/", "/legacy"):
            return self._upload(environ, start)
        return self.index(environ, start)

    # -- uploads -------------------------------------------------------------------------------

    def _authorized(self, environ: dict[str, Any]) -> bool:
        if self.upload_token is None and self._htpasswd_check is None:
            return True
        header = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and self.upload_token is not None:
            return hmac.compare_digest(value.strip(), self.upload_token)
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(value.strip()).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        if self.upload_token is not None and hmac.compare_digest(password, self.upload_token):
            return True
        return self._htpasswd_check is not None and self._htpasswd_check(user, password)

    def _upload(self, environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        if not self._authorized(environ):
            return _refuse(
                start,
                401,
                "uploads need the registry's token (twine -u __token__ -p TOKEN)",
                [("WWW-Authenticate", 'Basic realm="copycat registry"')],
            )
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_UPLOAD_BYTES:
            return _refuse(start, 413, f"uploads are limited to {MAX_UPLOAD_BYTES} bytes")
        body = environ["wsgi.input"].read(length)
        fields = _parse_form(environ, body)
        action = fields.get(":action", (None, b""))[1].decode()
        if action != "file_upload":
            return self._forward(environ, start, body)
        filename, content = fields.get("content", (None, b""))
        if not filename:
            return _refuse(start, 400, "missing the 'content' file field")
        filename = Path(filename).name
        if not filename.endswith(".whl"):
            return _refuse(
                start,
                400,
                f"{filename}: only wheels are accepted (plugin envs are built from wheels)",
            )
        try:
            parse_wheel_filename(filename)
        except ValueError as exc:
            return _refuse(start, 400, f"{filename}: {exc}")
        held = self._held(filename)
        if held is not None:  # checked again once validated, under the store lock
            return _refuse(start, 400, held)
        try:
            # Validations run in parallel (each in its own directory, mostly waiting on uv
            # and a plugin host); only storing is serialized.
            entry = self._validate(filename, content)
        except InvalidPluginError as exc:
            log.warning("rejected upload %s: %s", filename, "; ".join(exc.reasons))
            reasons = "\n".join(f"- {r}" for r in exc.reasons)
            # Like PyPI, the reasons go into the status line too: twine prints only that.
            status = _status_line(400, f"{filename} rejected: " + "; ".join(exc.reasons))
            return _text(start, status, f"{filename} was rejected:\n{reasons}\n")
        with self._upload_lock:
            # Again, now that no other upload can store: one of the same version may have
            # been stored while this one was validated, and must not get this one's entry.
            held = self._held(filename)
            if held is not None:
                return _refuse(start, 400, held)
            statuses: list[str] = []

            def stored(status: str, headers: list[Any], *exc_info: Any) -> Any:
                statuses.append(status)
                return start(status, headers, *exc_info)

            result = list(self._forward(environ, stored, body))
            if statuses[-1:] == ["200 OK"] and (self.plugins_dir / filename).exists():
                self.catalogue.add(entry)
                log.info("accepted plugin %s %s (%s)", entry["name"], entry["version"], filename)
            return result

    def _held(self, filename: str) -> str | None:
        """Why the index cannot take wheel ``filename`` (``None``: it can).

        A published version is immutable: no second file of it that an installer could pick
        instead of the first, i.e. one sharing a compatibility tag (the same file, or one that
        differs only by its build tag). Wheels of one version for other platforms may be added.
        """
        name, version, _, tags = parse_wheel_filename(filename)
        for held in sorted(self.plugins_dir.glob("*.whl")):
            if held.name == filename:
                return f"{filename} already exists on this index"
            try:
                held_name, held_version, _, held_tags = parse_wheel_filename(held.name)
            except ValueError:
                continue
            if (held_name, held_version) == (name, version) and held_tags & tags:
                return (
                    f"{name} {version} is already on this index as {held.name}: a published "
                    "version cannot change (publish it as a new version)"
                )
        return None

    def _validate(self, filename: str, content: bytes) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="copycat-upload-") as tmp:
            wheel = Path(tmp) / filename
            wheel.write_bytes(content)
            return validate_wheel(wheel, [self.plugins_dir, self.libraries_dir], self.upstream)

    def _forward(
        self, environ: dict[str, Any], start: StartResponse, body: bytes
    ) -> Iterable[bytes]:
        forwarded = dict(environ)
        forwarded["wsgi.input"] = io.BytesIO(body)
        forwarded["CONTENT_LENGTH"] = str(len(body))
        forwarded.pop("HTTP_AUTHORIZATION", None)
        return self.index(forwarded, start)


class RegistryServer:
    """``RegistryApp`` served on a port, on a background thread (``with`` or start/stop)."""

    def __init__(
        self,
        data: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        upload_token: str | None = None,
        htpasswd: Path | None = None,
        upstream: str | None = None,
    ) -> None:
        self.app = RegistryApp(
            data, upload_token=upload_token, htpasswd=htpasswd, upstream=upstream
        )
        self._server = make_server(
            host, port, self.app, server_class=_ThreadingServer, handler_class=_QuietHandler
        )
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def index_url(self) -> str:
        """The PEP 503 simple index, for ``pip --index-url`` / ``uv --index-url``."""
        return self.url + "/simple/"

    def start(self) -> RegistryServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="copycat-registry", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> RegistryServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def add_libraries(data: Path, wheels: Iterable[Path]) -> list[Path]:
    """Put dependency wheels (not plugins: no validation) into the index's ``libraries``.

    Raises:
        ConnectException: a file is not a wheel.
    """
    target = data / LIBRARIES_DIR
    target.mkdir(parents=True, exist_ok=True)
    added = []
    for wheel in wheels:
        if wheel.suffix != ".whl" or not wheel.is_file():
            raise ConnectException(f"{wheel} is not a wheel file")
        dest = target / wheel.name
        tmp = target / f".{wheel.name}.{uuid.uuid4().hex[:8]}"
        tmp.write_bytes(wheel.read_bytes())
        tmp.replace(dest)
        added.append(dest)
    return added
