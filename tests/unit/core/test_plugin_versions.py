"""KIP-891 version requirements, as Kafka's PluginVersionUtils reads them, plus PEP 440."""

from __future__ import annotations

import pytest

from core.plugin_versions import plugin_version_key, range_text, requirement
from plugin_api import ConfigException

VERSIONS = ["0.9", "1.0", "1.1", "1.5.2", "2.0", "2.1-SNAPSHOT", "undefined"]


def allowed(spec: str | None) -> list[str] | None:
    check = requirement(spec, "connector.plugin.version")
    return None if check is None else [v for v in VERSIONS if check(v)]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, None),
        ("", []),  # Kafka encloses it as [], which nothing matches
        ("latest", None),
        ("1.0", ["1.0"]),  # a bare version is a hard requirement, as Kafka encloses it in []
        ("[1.0]", ["1.0"]),
        ("[1.0,2.0)", ["1.0", "1.1", "1.5.2"]),
        ("(1.0,2.0]", ["1.1", "1.5.2", "2.0"]),
        ("(,1.0]", ["0.9", "1.0"]),
        ("[1.5,)", ["1.5.2", "2.0"]),
        ("[0.9],[1.1,1.5.2]", ["0.9", "1.1", "1.5.2"]),
        (">=1.1,<2", ["1.1", "1.5.2"]),
        ("~=1.1", ["1.1", "1.5.2"]),
        ("undefined", ["undefined"]),  # a plugin's version() may be any string
    ],
)
def test_what_a_spec_allows(spec: str | None, expected: list[str] | None) -> None:
    assert allowed(spec) == expected


@pytest.mark.parametrize("spec", ["[1.0", "[1.0,2.0", "(1.0)", "[a,b]", ">=>1"])
def test_bad_specs_name_the_key(spec: str) -> None:
    with pytest.raises(ConfigException) as caught:
        requirement(spec, "transforms.x.plugin.version")
    assert caught.value.name == "transforms.x.plugin.version"


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("9.9", "[9.9,9.9]"),
        ("abc", "[abc,abc]"),
        ("", "[,]"),
        ("[9.0,10.0)", "[9.0,10.0)"),
        ("[ 1.0 , 2.0 ),[3.0]", "[1.0,2.0),[3.0,3.0]"),
        ("(,)", "(,)"),
        (">=1,<2", ">=1,<2"),
    ],
)
def test_a_range_reads_as_kafkas_messages_show_it(spec: str, shown: str) -> None:
    assert range_text(spec) == shown


def test_an_unclosed_range_is_unbounded_in_mavens_words() -> None:
    with pytest.raises(ConfigException) as caught:
        requirement("[1.0", "value.converter.plugin.version")
    assert str(caught.value) == "Unbounded range: [1.0"


@pytest.mark.parametrize(
    ("class_key", "version_key"),
    [
        ("connector.class", "connector.plugin.version"),
        ("value.converter", "value.converter.plugin.version"),
        ("header.converter", "header.converter.plugin.version"),
        ("transforms.mask.type", "transforms.mask.plugin.version"),
        ("predicates.isFoo.type", "predicates.isFoo.plugin.version"),
    ],
)
def test_version_keys(class_key: str, version_key: str) -> None:
    assert plugin_version_key(class_key) == version_key
