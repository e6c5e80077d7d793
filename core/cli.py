"""The ``copycat`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core.cli_plugins import add_commands
from core.log_levels import parse_level
from isolation import stacks
from plugin_api import ConnectException


def _cmd_standalone(args: argparse.Namespace) -> int:
    from core.bootstrap import run_standalone

    return run_standalone(args.worker_config, args.connector_configs)


def _cmd_distributed(args: argparse.Namespace) -> int:
    from core.bootstrap import run_distributed

    return run_distributed(args.worker_config)


def _cmd_schema_registry(args: argparse.Namespace) -> int:
    from core.dev.schema_registry import BasicAuth, BasicAuthError, SchemaRegistry

    auth: BasicAuth | None = None
    roles = args.basic_auth_roles.split(",") if args.basic_auth_roles else None
    try:
        if args.basic_auth_file:
            auth = BasicAuth.from_file(
                args.basic_auth_file,
                extra=args.basic_auth,
                allowed_roles=roles,
                realm=args.basic_auth_realm,
            )
        elif args.basic_auth:
            auth = BasicAuth.from_pairs(
                args.basic_auth, allowed_roles=roles, realm=args.basic_auth_realm
            )
    except (BasicAuthError, OSError) as exc:
        print(f"copycat schema-registry: error: {exc}", file=sys.stderr)
        return 2
    registry = SchemaRegistry(
        args.bootstrap_servers, port=args.port, host=args.host, topic=args.topic, basic_auth=auth
    )
    registry.start()
    secured = f", basic auth, realm {auth.realm}" if auth is not None else ""
    print(f"schema registry listening on {registry.url} (topic {args.topic}{secured})", flush=True)
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


# What --log-level takes: Kafka's level names, as /admin/loggers takes them, and Python's
# WARNING (the one name of ours Kafka spells differently), in any case.
LOG_LEVEL_NAMES = ("TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "OFF")
LOG_LEVEL_HELP = "TRACE, DEBUG, INFO, WARN (or WARNING), ERROR, FATAL or OFF (default INFO)"


def _log_level(text: str) -> int:
    """``--log-level``'s type: the level Kafka names ``text``. Anything else is argparse's
    usual "invalid choice" error naming the value (it used to mean INFO, silently)."""
    chosen = parse_level("WARN" if text.strip().upper() == "WARNING" else text)
    if chosen is None:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(LOG_LEVEL_NAMES)})"
        )
    return chosen


def _add_log_level(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--log-level", type=_log_level, default=default, metavar="LEVEL", help=LOG_LEVEL_HELP
    )


def _log_level_after_commands(parser: argparse.ArgumentParser) -> None:
    """``--log-level`` after any (sub)command too, as in ``copycat standalone --log-level
    DEBUG w.properties``. SUPPRESS: given there, it wins; otherwise the top-level value stays."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                _add_log_level(child, argparse.SUPPRESS)
                _log_level_after_commands(child)


def _setup_logging(chosen: int) -> None:
    import logging

    logging.basicConfig(
        level=chosen,
        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # kafka-python (the worker group's membership client) logs every connection and join at
    # INFO; the herder logs each rebalance itself, so its lines are kept for warnings.
    logging.getLogger("kafka").setLevel(max(chosen, logging.WARNING))
    # py4j (pyspark's bridge to the Spark driver JVM, task.runtime=spark) logs "Closing down
    # clientserver connection" at INFO on every call into the JVM.
    logging.getLogger("py4j").setLevel(max(chosen, logging.WARNING))
    from core.kafka import route_client_warnings

    route_client_warnings()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="copycat",
        description="Kafka Connect in Python: run connectors between Kafka and other systems, "
        "each plugin in its own isolated environment.",
    )
    _add_log_level(parser, parse_level("INFO"))
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    standalone = sub.add_parser(
        "standalone",
        help="run a standalone worker (like connect-standalone)",
        description="Run one worker with the connectors given as .properties or .json files. "
        "Source offsets go to offset.storage.file.filename. Without bootstrap.servers, an "
        "embedded in-memory dev broker is started. Stops gracefully on SIGTERM, SIGINT or SIGHUP.",
    )
    standalone.add_argument("worker_config", metavar="worker.properties")
    # default=[]: without one argparse counts a nargs="*" positional as required, and "the
    # following arguments are required" named connector.properties, which is optional.
    standalone.add_argument(
        "connector_configs", nargs="*", default=[], metavar="connector.properties"
    )
    standalone.set_defaults(func=_cmd_standalone)

    distributed = sub.add_parser(
        "distributed",
        help="run a worker of a distributed cluster (like connect-distributed)",
        description="Run one worker of the Connect cluster named by group.id: connector "
        "configs, source offsets and statuses live in the config.storage.topic, "
        "offset.storage.topic and status.storage.topic (created compacted when missing), "
        "and the group's leader spreads connectors and tasks over the workers. Connectors "
        "are managed over REST on any worker. Stops gracefully on SIGTERM, SIGINT or SIGHUP.",
    )
    distributed.add_argument("worker_config", metavar="worker.properties")
    distributed.set_defaults(func=_cmd_distributed)

    add_commands(sub)

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
    registry.add_argument(
        "--basic-auth",
        action="append",
        default=[],
        metavar="USER:PASSWORD",
        help="require HTTP basic authentication on every request and let this user in "
        "(repeatable); as Confluent's authentication.method=BASIC, a request without valid "
        "credentials is answered 401",
    )
    registry.add_argument(
        "--basic-auth-file",
        metavar="FILE",
        help="users for basic authentication, one 'user: password[,role ...]' per line "
        "(Jetty's PropertyFileLoginModule format; plain-text passwords)",
    )
    registry.add_argument(
        "--basic-auth-roles",
        metavar="ROLE,...",
        help="let in only users with one of these roles (Confluent's authentication.roles; "
        "default: every user); others are answered 403",
    )
    registry.add_argument(
        "--basic-auth-realm",
        default="SchemaRegistry",
        metavar="REALM",
        help="realm named in the WWW-Authenticate header (default SchemaRegistry)",
    )
    registry.set_defaults(func=_cmd_schema_registry)
    _log_level_after_commands(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.log_level)
    stacks.enable()  # kill -USR1 <pid>: every thread's stack to stderr (isolation/stacks.py)
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
