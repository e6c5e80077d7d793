"""The ``copycat plugins``, ``copycat plugin`` and ``copycat registry`` commands.

``plugins`` manages what is installed in plugin.path (install, upgrade, remove, list, info,
export-wheelhouse, build-offline); ``plugin`` is for authors (new, publish); ``registry`` runs
the private index (serve, add). A running worker sees every change to plugin.path without a
restart (its plugin catalogue is live).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from isolation import PluginEnvironment

PLUGIN_PATH_ENV = "COPYCAT_PLUGIN_PATH"
DEFAULT_PLUGIN_PATH = "plugins.d"
REGISTRY_TOKEN_ENV = "COPYCAT_REGISTRY_TOKEN"
DEFAULT_REGISTRY_PORT = 8090


def plugin_paths(args: argparse.Namespace) -> list[Path]:
    raw = (
        getattr(args, "plugin_path", None) or os.environ.get(PLUGIN_PATH_ENV) or DEFAULT_PLUGIN_PATH
    )
    return [Path(p.strip()) for p in raw.split(",") if p.strip()]


def _index_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--index-url", help="package index (PEP 503), e.g. http://host:8090/simple/"
    )
    parser.add_argument(
        "--find-links", action="append", metavar="DIR", help="also look for wheels in DIR"
    )


def _path_option(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: given after the action, it wins; otherwise the group-level value stays.
    parser.add_argument("--plugin-path", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


# -- plugins ---------------------------------------------------------------------------------


def _cmd_install(args: argparse.Namespace) -> int:
    from registry import install

    target = plugin_paths(args)[0]
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
        _warn_indistinct(plugin_paths(args), env)
    return 0


def _warn_indistinct(paths: list[Path], env: PluginEnvironment) -> None:
    """Say loudly when ``env`` reports the same component versions as another installed
    version of its plugin: its author did not bump ``version()``, and workers cannot tell the
    two apart. Not refused: the install itself is fine, and removing the old one fixes it."""
    from registry.manage import describe, indistinct

    same = indistinct(paths, env)
    if not same:
        return
    row = describe(env)
    for other, components in same.items():
        print(
            f"WARNING: {row['name']} {row['version']} ({env.location}) reports the same "
            f"component versions as {other.location}: {', '.join(components)}. Its version() "
            "did not change with the package version, so workers cannot tell the two apart: "
            "connector.plugin.version cannot choose between them, statuses show the same "
            "version for both, and workers use the newest package. Remove the other one "
            f"(`copycat plugins remove {row['name']}=={describe(other)['version']}`), and "
            "have version() return the package version, e.g. "
            f'importlib.metadata.version("{row["name"]}").',
            file=sys.stderr,
        )


def _cmd_upgrade(args: argparse.Namespace) -> int:
    from registry.manage import upgrade

    for name in args.names:
        env, removed, in_use = upgrade(
            plugin_paths(args),
            name,
            index_url=args.index_url,
            find_links=args.find_links or (),
            keep=args.keep,
        )
        if env is None:
            print(f"{name} is up to date")
            continue
        print(f"installed {env.location.name}")
        for old in removed:
            if old.location != env.location:
                print(f"removed {old.location}")
        for old, procs in in_use.items():
            print(f"kept {old.location}: in use by {', '.join(map(str, procs))}")
        _warn_indistinct(plugin_paths(args), env)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from registry import scan
    from registry.manage import describe, outdated

    if args.outdated:
        rows: list[dict[str, Any]] = outdated(
            plugin_paths(args), index_url=args.index_url, find_links=args.find_links or ()
        )
        if args.json:
            print(json.dumps(rows, indent=2))
        for r in rows if not args.json else ():
            print(f"{r['name']:<30} {r['installed']:<10} -> {r['latest']}")
        if not rows and not args.json:
            print("every plugin is up to date")
        return 0
    rows = [describe(env) for env in scan(plugin_paths(args))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no plugins installed in {', '.join(map(str, plugin_paths(args)))}")
        return 0
    for r in rows:
        lock = "locked" if r["locked"] else "no lock"
        broken = f", BROKEN: {r['broken']}" if r["broken"] else ""
        if r.get("incompatible"):
            broken += f", INCOMPATIBLE: {r['incompatible']}"
        print(f"{r['name']} {r['version']}  [{r['made_by']}, {lock}{broken}]  {r['location']}")
        for p in r["plugins"]:
            print(f"    {p['name']:<36} {p['type']:<16} {p['version']}")
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    from registry.manage import info

    rows = info(plugin_paths(args), args.spec)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{r['name']} {r['version']}: {r['summary']}")
        print(f"  licence:   {r['licence'] or 'unknown'}")
        lock = "locked" if r["locked"] else "no lock"
        origin = f" from {r['index_url']}" if r["index_url"] else ""
        print(f"  location:  {r['location']} ({r['made_by']}, {lock})")
        print(f"  source:    {r['source'] or 'unknown'}{origin}")
        for p in r["plugins"]:
            aliases = f" (aliases: {', '.join(p['aliases'])})" if p["aliases"] else ""
            print(f"  {p['type']} {p['class']} {p['version']}{aliases}")
            for d in p["config"]:
                default = "" if d.get("default_value") is None else f" = {d['default_value']}"
                print(f"      {d['name']} ({d['type']}{default}): {d.get('documentation', '')}")
    return 0


def _cmd_remove(args: argparse.Namespace) -> int:
    from registry.manage import remove_unused

    for spec in args.specs:
        for env in remove_unused(plugin_paths(args), spec, force=args.force):
            print(f"removed {env.location}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from registry import find
    from registry.installer import PluginNotFoundError
    from registry.locks import LOCK_NAME, LockError, export_wheelhouse
    from registry.manage import describe

    hits = find(plugin_paths(args), args.spec)
    if len(hits) != 1:
        found = ", ".join(e.location.name for e in hits) or "none"
        raise PluginNotFoundError(f"{args.spec!r} must name one installed env (found: {found})")
    if hits[0].is_zip or not (hits[0].location / LOCK_NAME).exists():
        raise LockError(
            f"{args.spec!r} is installed at {hits[0].location} ({describe(hits[0])['made_by']}) "
            f"with no lock ({LOCK_NAME}), so it cannot be exported: only envs installed with "
            "`copycat plugins install` have one"
        )
    dest = export_wheelhouse(hits[0], Path(args.dest))
    print(f"wrote the wheelhouse of {hits[0].location.name} to {dest}")
    return 0


def _cmd_build_offline(args: argparse.Namespace) -> int:
    from registry.locks import LOCK_NAME, Lock, build_env_offline

    wheelhouse = Path(args.wheelhouse)
    lock = Lock.read(wheelhouse / LOCK_NAME)
    name = args.name or Path(str(lock.tool.get("exported-from", wheelhouse.name))).name
    env = build_env_offline(wheelhouse, plugin_paths(args)[0] / name)
    print(f"built {env.location} from {wheelhouse}")
    return 0


# -- plugin (authors) ------------------------------------------------------------------------


def _cmd_new(args: argparse.Namespace) -> int:
    from registry.authoring import scaffold, test_command

    project = scaffold(args.name, args.kind, Path(args.directory))
    print(f"created {project}: run its tests with `{test_command(project)}`")
    return 0


def _cmd_publish(args: argparse.Namespace) -> int:
    from registry.authoring import publish

    wheel = publish(Path(args.project), args.index, args.token)
    print(f"published {wheel.name} to {args.index}")
    return 0


# -- registry --------------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace) -> int:
    from registry.server import RegistryServer

    token = args.upload_token or os.environ.get(REGISTRY_TOKEN_ENV)
    server = RegistryServer(
        Path(args.data),
        host=args.host,
        port=args.port,
        upload_token=token,
        htpasswd=Path(args.htpasswd) if args.htpasswd else None,
        upstream=args.upstream,
    )
    auth = "token" if token else "htpasswd" if args.htpasswd else "none (anyone may upload)"
    print(
        f"plugin registry at {server.url} (index {server.index_url}; uploads: {auth})", flush=True
    )
    try:
        server.serve_forever()
    finally:
        server.stop()
    return 0


def _cmd_add(args: argparse.Namespace) -> int:
    from registry.server import add_libraries

    for path in add_libraries(Path(args.data), [Path(w) for w in args.wheels]):
        print(f"added {path}")
    return 0


def add_commands(sub: Any) -> None:
    """Add ``plugins``, ``plugin`` and ``registry`` to the top-level subparsers."""
    plugins = sub.add_parser(
        "plugins",
        help="install, upgrade, list and remove plugins in plugin.path",
        description="Manage plugins: each is installed into its own venv under plugin.path, "
        "versions side by side, with a lock. A running worker sees changes without a restart.",
    )
    plugins.add_argument(
        "--plugin-path",
        help="comma-separated plugin.path directories "
        f"(default: ${PLUGIN_PATH_ENV} or ./{DEFAULT_PLUGIN_PATH}); installs go into the first",
    )
    psub = plugins.add_subparsers(dest="action", metavar="ACTION", required=True)

    inst = psub.add_parser(
        "install",
        help="install plugins from an index, wheels or directories",
        description="Install each SOURCE (NAME, NAME==VERSION, a spec such as 'copycat-jdbc>=1.2', "
        "a direct reference 'NAME @ URL', a .whl file or a project directory) into a new venv, "
        "resolved with uv into a lock (pylock.toml) kept in the env. As with pip, a SOURCE is a "
        "path only if it contains a path separator, starts with '.' or ends in .whl: give a "
        "directory as ./NAME; a bare NAME always comes from the index.",
    )
    inst.add_argument("sources", nargs="+", metavar="SOURCE")
    _index_options(inst)
    inst.add_argument("--offline", action="store_true", help="never touch the network")
    inst.add_argument("--replace", action="store_true", help="replace the same version")
    _path_option(inst)
    inst.set_defaults(func=_cmd_install)

    up = psub.add_parser(
        "upgrade",
        help="install the newest version of installed plugins",
        description="Install the newest version the index offers beside the installed ones, "
        "then remove the older versions (unless --keep); an older version that live plugin "
        "hosts run from (on Linux) is kept, and said so.",
    )
    up.add_argument("names", nargs="+", metavar="NAME")
    _index_options(up)
    up.add_argument("--keep", action="store_true", help="keep the older versions installed")
    _path_option(up)
    up.set_defaults(func=_cmd_upgrade)

    lst = psub.add_parser(
        "list",
        help="list installed plugins, how each env was made and whether it has a lock",
        description="Every plugin location (copycat, pip or uv venv, pip --target, zipapp) "
        "and what it provides, read without importing plugin code.",
    )
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.add_argument("--outdated", action="store_true", help="only plugins with a newer version")
    _index_options(lst)
    _path_option(lst)
    lst.set_defaults(func=_cmd_list)

    inf = psub.add_parser(
        "info",
        help="components, versions, config definitions, licence and origin of a plugin",
    )
    inf.add_argument("spec", metavar="NAME[==VERSION]")
    inf.add_argument("--json", action="store_true", help="print JSON")
    _path_option(inf)
    inf.set_defaults(func=_cmd_info)

    rm = psub.add_parser(
        "remove",
        help="remove installed plugins",
        description="Remove plugins by name, or name==version to remove one of several. "
        "An env that live plugin hosts run from (on Linux) is not removed without --force.",
    )
    rm.add_argument("specs", nargs="+", metavar="NAME[==VERSION]")
    rm.add_argument(
        "--force", action="store_true", help="remove even envs live plugin hosts run from"
    )
    _path_option(rm)
    rm.set_defaults(func=_cmd_remove)

    exp = psub.add_parser(
        "export-wheelhouse",
        help="copy an env's locked wheels and lock into a directory (for offline rebuilds)",
    )
    exp.add_argument("spec", metavar="NAME[==VERSION]")
    exp.add_argument("--dest", required=True, metavar="DIR")
    _path_option(exp)
    exp.set_defaults(func=_cmd_export)

    off = psub.add_parser(
        "build-offline",
        help="build a plugin env from a wheelhouse, without network",
    )
    off.add_argument("wheelhouse", metavar="DIR")
    off.add_argument("--name", help="env directory name (default: the exported env's)")
    _path_option(off)
    off.set_defaults(func=_cmd_build_offline)

    author = sub.add_parser(
        "plugin", help="for plugin authors: scaffold and publish a plugin project"
    )
    asub = author.add_subparsers(dest="action", metavar="ACTION", required=True)
    new = asub.add_parser(
        "new",
        help="scaffold a plugin project whose generated tests pass",
        description="Write NAME/ with a pyproject (entry point, plugin_api range), a working "
        "example, tests on plugin_api.testing and a README.",
    )
    new.add_argument("name", metavar="NAME")
    new.add_argument("--kind", required=True, choices=["source", "sink", "converter", "transform"])
    new.add_argument("--directory", default=".", help="where to create NAME/ (default: .)")
    new.set_defaults(func=_cmd_new)
    pub = asub.add_parser(
        "publish",
        help="build the wheel (uv build) and upload it (twine) to a registry",
    )
    pub.add_argument("project", nargs="?", default=".", metavar="DIR")
    pub.add_argument("--index", required=True, help="registry URL, e.g. http://host:8090")
    pub.add_argument("--token", help="upload token (default: $COPYCAT_INDEX_TOKEN)")
    pub.set_defaults(func=_cmd_publish)

    reg = sub.add_parser("registry", help="run a private plugin index (pypiserver + catalogue)")
    rsub = reg.add_subparsers(dest="action", metavar="ACTION", required=True)
    serve = rsub.add_parser(
        "serve",
        help="serve the index, validating uploads, with a catalogue/search API",
        description="A package index pip, uv and twine use unchanged (pypiserver), serving "
        "DIR/plugins (validated uploads) and DIR/libraries (dependencies), with "
        "GET /api/plugins?q=... for search. No account needed to read.",
    )
    serve.add_argument("--data", required=True, metavar="DIR")
    serve.add_argument("--port", type=int, default=DEFAULT_REGISTRY_PORT)
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument(
        "--upload-token", help=f"token uploads must present (default: ${REGISTRY_TOKEN_ENV})"
    )
    serve.add_argument("--htpasswd", help="htpasswd file of users allowed to upload")
    serve.add_argument(
        "--upstream",
        metavar="URL",
        help="index to redirect to for projects not held here, and to resolve uploads' "
        "dependencies from (default: none, air-gapped)",
    )
    serve.set_defaults(func=_cmd_serve)
    add = rsub.add_parser(
        "add", help="add dependency wheels (libraries, not plugins) to an index's data dir"
    )
    add.add_argument("--data", required=True, metavar="DIR")
    add.add_argument("wheels", nargs="+", metavar="WHEEL")
    add.set_defaults(func=_cmd_add)
