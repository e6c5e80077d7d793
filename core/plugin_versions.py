"""KIP-891 version requirements: which installed versions a ``*.plugin.version`` value allows.

Kafka Connect reads the value as a Maven version range (``PluginVersionUtils``): unset or
``latest`` means the newest installed; a bare version ``1.0`` is a *hard* requirement (Kafka
encloses it as ``[1.0]``); ``[1.0,2.0)``, ``(,2.0]``, ``[1.5,)`` and unions such as
``[1.0,1.2),[1.4,)`` are ranges. Copycat accepts those exactly, and, for Python users, PEP 440
specifiers too (``>=1,<2``, ``~=1.4``, ``==1.*``). Pure functions, safe on any thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from plugin_api import ConfigException

_RESTRICTION = re.compile(r"\s*([\[(])([^\])]*)([\])])\s*(?:,|$)")

Requirement = Callable[[str], bool]


def version_order(version: str) -> tuple[int, Version | str]:
    """A sort key for plugin versions: PEP 440 order, versions it cannot read first (by text)."""
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def plugin_version_key(class_key: str) -> str:
    """The ``*.plugin.version`` key for a class key: ``connector.class`` ->
    ``connector.plugin.version``, ``transforms.a.type`` -> ``transforms.a.plugin.version``,
    ``value.converter`` -> ``value.converter.plugin.version``."""
    for suffix in (".class", ".type"):
        if class_key.endswith(suffix):
            return class_key[: -len(suffix)] + ".plugin.version"
    return class_key + ".plugin.version"


def _parse(version: str, key: str, spec: str) -> Version:
    try:
        return Version(version.strip())
    except InvalidVersion:
        raise ConfigException(key, spec, f"{version.strip()!r} is not a version") from None


def _maven(spec: str, key: str) -> Requirement:
    checks: list[Requirement] = []
    pos = 0
    while pos < len(spec):
        match = _RESTRICTION.match(spec, pos)
        if match is None:
            if not any(c in spec[pos:] for c in "])"):
                # Maven's words, which Kafka Connect passes on
                exc = ConfigException(f"Unbounded range: {spec}")
                exc.name, exc.value = key, spec
                raise exc
            raise ConfigException(key, spec, f"not a version range (at {spec[pos:]!r})")
        pos = match.end()
        low_incl, body, high_incl = match.group(1) == "[", match.group(2), match.group(3) == "]"
        if "," not in body:
            if not (low_incl and high_incl):
                raise ConfigException(key, spec, f"a single version must be in [], not {spec!r}")
            exact = _parse(body, key, spec)
            checks.append(lambda v, exact=exact: v == exact)  # type: ignore[misc]
            continue
        low_text, high_text = body.split(",", 1)
        low = _parse(low_text, key, spec) if low_text.strip() else None
        high = _parse(high_text, key, spec) if high_text.strip() else None

        def check(
            v: Version,
            low: Version | None = low,
            high: Version | None = high,
            li: bool = low_incl,
            hi: bool = high_incl,
        ) -> bool:
            if low is not None and (v < low or (v == low and not li)):
                return False
            return not (high is not None and (v > high or (v == high and not hi)))

        checks.append(check)  # type: ignore[arg-type]

    def allowed(version: str) -> bool:
        try:
            parsed = Version(version)
        except InvalidVersion:
            return False
        return any(c(parsed) for c in checks)  # type: ignore[arg-type]

    return allowed


def requirement(spec: str | None, key: str) -> Requirement | None:
    """What ``spec`` (the value of config ``key``) allows, or None for "the newest".

    Raises:
        ConfigException: naming ``key``, if ``spec`` is neither a version, a Maven range nor a
            PEP 440 specifier.
    """
    if spec is None or spec.strip() == "latest":
        return None
    spec = spec.strip()
    if not spec:
        # Kafka encloses an empty value as it does a version, [], which nothing matches
        return lambda v: False
    if spec[0] in "[(":
        return _maven(spec, key)
    if spec[0] in "<>=!~":
        try:
            specifier = SpecifierSet(spec)
        except InvalidSpecifier as exc:
            raise ConfigException(key, spec, str(exc)) from exc
        return lambda v: _in(specifier, v)
    exact = spec
    try:
        wanted: Version | None = Version(spec)
    except InvalidVersion:
        wanted = None  # a plugin's version() may be any string: then compare as text
    return lambda v: v == exact or (wanted is not None and _same(v, wanted))


def range_text(spec: str) -> str:
    """``spec`` as Kafka Connect's messages show a version range (Maven's ``VersionRange``):
    each restriction as ``[low,high)``, a bare version as the hard range ``[v,v]``, an empty
    one as ``[,]``; a PEP 440 specifier as given."""
    spec = spec.strip()
    if spec[:1] not in ("[", "("):
        if spec[:1] and spec[0] in "<>=!~":
            return spec
        spec = f"[{spec}]"
    parts = []
    for match in _RESTRICTION.finditer(spec):
        low, _, high = match.group(2).partition(",")
        if "," not in match.group(2):
            high = low
        parts.append(f"{match.group(1)}{low.strip()},{high.strip()}{match.group(3)}")
    return ",".join(parts) or spec


def _in(specifier: SpecifierSet, version: str) -> bool:
    try:
        return specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _same(version: str, wanted: Version) -> bool:
    try:
        return Version(version) == wanted
    except InvalidVersion:
        return False
