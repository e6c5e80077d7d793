"""The ``copycat`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from plugin_api import ConnectException

PLUGIN_PATH_ENV = "COPYCAT_PLUGIN_PATH"
DEFAULT_PLUGIN_PATH = "plugins.d"


def _plugin_paths(args: argparse.Namespace) -> list[Path]:
    raw = args.plugin_path or os.environ.get(PLUGIN_PATH_ENV) or DEFAULT_PLUGIN_PATH
    return [Path(p.strip()) for p in raw.split(",") if p.strip()]


def _cmd_plugins_install(args: argparse.Namespace) -> int:
    from registry import install

    target = _plugin_paths(args)[0]
    for source in args.sources:
        env = install(
            source,
            target,
            find_links=args.find_links or (),
            index_url=args.index_url,
            offline=args.offline,
            replace=args.replace,
        )
        names = ", ".join(f"{d.name} ({d.kind} {d.version})" for d in env.catalogue())
        print(f"installed {env.location.name} into {target}: {names}")
    return 0


def _cmd_plugins_list(args: argparse.Namespace) -> int:
    from registry import scan

    rows = []
    for env in scan(_plugin_paths(args)):
        for plugin in env.catalogue():
            rows.append(
                {
                    "class": plugin.class_name,
                    "name": plugin.name,
                    "type": plugin.kind,
                    "version": plugin.version,
                    "distribution": plugin.distribution,
                    "location": str(env.location),
                }
            )
    if args.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"no plugins installed in {', '.join(map(str, _plugin_paths(args)))}")
    else:
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            print(f"{r['name']:<{width}}  {r['type']:<16} {r['version']:<10} {r['distribution']}")
    return 0


def _cmd_plugins_remove(args: argparse.Namespace) -> int:
    from registry import remove

    for spec in args.specs:
        for env in remove(_plugin_paths(args), spec):
            print(f"removed {env.location}")
    return 0


def _cmd_standalone(args: argparse.Namespace) -> int:
    from core.standalone import run_standalone

    return run_standalone(args.worker_config, args.connector_configs)


def _cmd_schema_registry(args: argparse.Namespace) -> int:
    from core.schema_registry import SchemaRegistry

    registry = SchemaRegistry(
        args.bootstrap_servers, port=args.port, host=args.host, topic=args.topic
    )
    registry.start()
    print(f"schema registry listening on {registry.url} (topic {args.topic})", flush=True)
    try:
        registry.serve_forever()
    finally:
        registry.stop()
    return 0


def _version() -> str:
    """``copycat --version``: the runtime's and plugin_api's versions, as installed."""
    from importlib import metadata

    def installed(distribution: str) -> str:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return "unknown (not installed)"

    return f"copycat {installed('copycat')} (plugin_api {installed('copycat-plugin-api')})"


def _setup_logging(level: str) -> None:
    import logging

    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="copycat",
        description="Kafka Connect in Python: run connectors between Kafka and other systems, "
        "each plugin in its own isolated environment.",
    )
    parser.add_argument(
        "--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)"
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    standalone = sub.add_parser(
        "standalone",
        help="run a standalone worker (like connect-standalone)",
        description="Run one worker with the connectors given as .properties or .json files. "
        "Source offsets go to offset.storage.file.filename. Without bootstrap.servers, an "
        "embedded in-memory dev broker is started. Stops gracefully on SIGTERM/SIGINT.",
    )
    standalone.add_argument("worker_config", metavar="worker.properties")
    standalone.add_argument("connector_configs", nargs="*", metavar="connector.properties")
    standalone.set_defaults(func=_cmd_standalone)

    plugins = sub.add_parser(
        "plugins",
        help="install, list and remove plugins in plugin.path",
        description="Manage plugins: each is installed into its own venv "
        "under plugin.path, versions side by side.",
    )
    plugins.add_argument(
        "--plugin-path",
        help="comma-separated plugin.path directories "
        f"(default: ${PLUGIN_PATH_ENV} or ./{DEFAULT_PLUGIN_PATH}); "
        "installs go into the first",
    )
    psub = plugins.add_subparsers(dest="action", metavar="ACTION", required=True)

    inst = psub.add_parser(
        "install",
        help="install plugins from wheels, directories or an index",
        description="Install each SOURCE (a .whl file, a project directory, "
        "or a requirement such as 'copycat-jdbc>=1.2') into a new venv.",
    )
    inst.add_argument("sources", nargs="+", metavar="SOURCE")
    inst.add_argument(
        "--find-links",
        action="append",
        metavar="DIR",
        help="also look for wheels in DIR (repeatable)",
    )
    inst.add_argument("--index-url", help="package index to install from (PEP 503)")
    inst.add_argument("--offline", action="store_true", help="never touch the network")
    inst.add_argument(
        "--replace", action="store_true", help="replace an installed plugin of the same version"
    )
    inst.set_defaults(func=_cmd_plugins_install)

    lst = psub.add_parser(
        "list",
        help="list installed plugins and what they provide",
        description="List every connector, converter, transform, predicate "
        "and config provider installed, read without importing plugin code.",
    )
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.set_defaults(func=_cmd_plugins_list)

    rm = psub.add_parser(
        "remove",
        help="remove installed plugins",
        description="Remove plugins by distribution name, or name==version "
        "to remove one version of several.",
    )
    rm.add_argument("specs", nargs="+", metavar="NAME[==VERSION]")
    rm.set_defaults(func=_cmd_plugins_remove)

    registry = sub.add_parser(
        "schema-registry",
        help="run a development Schema Registry (Confluent REST API)",
        description="Serve the Confluent Schema Registry REST API for Avro schemas, storing "
        "every change in a compacted Kafka topic that is replayed on start.",
    )
    registry.add_argument(
        "--bootstrap-servers",
        required=True,
        metavar="HOST:PORT",
        help="Kafka bootstrap servers holding the schemas topic",
    )
    registry.add_argument("--port", type=int, default=8081, help="HTTP port (default 8081)")
    registry.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    registry.add_argument("--topic", default="_schemas", help="schemas topic (default _schemas)")
    registry.set_defaults(func=_cmd_schema_registry)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.log_level)
    try:
        code: int = args.func(args)
        return code
    except ConnectException as exc:
        print(f"copycat: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
