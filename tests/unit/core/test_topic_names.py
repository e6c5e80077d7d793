"""topics.regex matched as Java's Pattern.matches() on whole names, and Kafka's topic name rules."""

from __future__ import annotations

import pytest

from core.topic_names import (
    JavaRegexError,
    compile_topics_regex,
    distinct_topics,
    matching_topics,
    topic_name_error,
)

NAMES = ["v1", "v1x", "v2", "V1", "a.b", "axb", "__consumer_offsets", "__transaction_state"]


@pytest.mark.parametrize(
    ("java", "matched"),
    [
        ("v1", ["v1"]),  # the whole name, not a prefix
        (r"v\d", ["v1", "v2"]),
        ("(?i)v1", ["V1", "v1"]),
        ("v(?i)1", ["v1"]),  # a flag mid-pattern (Python wants global flags first)
        ("x(?i)Y|v1", ["V1", "v1"]),  # ... on to the group's end, later branches included
        (r"\Qa.b\E", ["a.b"]),
        (r"a\.b|(?<n>v)\k<n>", ["a.b"]),
        (r"\p{Alpha}\p{Digit}", ["V1", "v1", "v2"]),
        ("[v[V]]1", ["V1", "v1"]),
        (".*", ["V1", "a.b", "axb", "v1", "v1x", "v2"]),  # never the internal topics
        ("v1{1}x?", ["v1", "v1x"]),
        (r"[v{]1", ["v1"]),  # a { in a class is a character
        ("__.*", []),
    ],
)
def test_matching_is_javas(java: str, matched: list[str]) -> None:
    assert matching_topics(compile_topics_regex(java), NAMES) == matched


@pytest.mark.parametrize(
    "java",
    [
        *("(?P<n>v)", "(?#c)v", "[a&&b]", "(", "v)", "[v", "(?y)v", "\\"),
        # A { Java cannot read as {n}, {n,} or {n,m}: Python took these literally or as {0,m}.
        *("a{,3}", "x{", "${env}-orders", "a{1"),
    ],
)
def test_what_java_refuses_or_cannot_be_translated_is_refused(java: str) -> None:
    with pytest.raises(JavaRegexError):
        compile_topics_regex(java)


@pytest.mark.parametrize(
    "java, message",
    [  # what Kafka Connect 4.1.1 answered for each (java.util.regex.PatternSyntaxException)
        ("a(", "Unclosed group near index 2\na("),
        ("ab)", "Unmatched closing ')' near index 1\nab)\n ^"),
        ("a**", "Dangling meta character '*' near index 2\na**\n  ^"),
        ("[a", "Unclosed character class near index 1\n[a\n ^"),
        ("(?<n", "named capturing group is missing trailing '>' near index 4\n(?<n"),
        ("x{2", "Unclosed counted closure near index 3\nx{2"),
        ("(?P<n>v1)", "Unknown inline modifier near index 2\n(?P<n>v1)\n  ^"),
        ("a{2,1}", "Illegal repetition range near index 5\na{2,1}\n     ^"),
        ("\\", "Unexpected internal error near index 1\n\\"),
    ],
)
def test_a_refused_regex_is_worded_as_javas_exception(java: str, message: str) -> None:
    with pytest.raises(JavaRegexError) as refused:
        compile_topics_regex(java)
    assert str(refused.value) == message


def test_topic_names_follow_kafkas_rules() -> None:
    assert topic_name_error("orders.v1_x-2") is None
    assert topic_name_error("bad topic!") == (
        'Topic name "bad topic!" is illegal, it contains a character other than ASCII '
        "alphanumerics, '.', '_' and '-'"
    )
    assert topic_name_error("..") == 'Topic name cannot be "." or ".."'
    assert "can't be longer than 249" in (topic_name_error("t" * 250) or "")
    assert distinct_topics(["v1", "v1", "", "v2", "v1"]) == ["v1", "v2"]
