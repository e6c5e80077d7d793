"""Topic names and ``topics.regex`` as Kafka Connect understands them.

Kafka Connect subscribes a ``topics.regex`` sink with the Java consumer's pattern
subscription: a topic is consumed when ``Pattern.matcher(topic).matches()``, the *whole* name
in Java's regex syntax, and internal topics (``__consumer_offsets``, ...) are never matched
(``exclude.internal.topics=true``). librdkafka's regex subscription searches instead of
matching, uses POSIX syntax (no ``\\d``, no ``(?i)``) and includes internal topics, so the sink
matches topic names itself with :func:`compile_topics_regex` and subscribes to the explicit
list (see :mod:`core.runtime.sink`); config validation uses the same matcher.

Java's syntax is translated where Python's differs in what a topic regex uses: inline flags
anywhere (``a(?i)b``; Python wants global flags first), ``\\Q...\\E`` quoting, ``(?<name>...)``
groups, ``\\k<name>``, ``\\p{Alpha}``-style POSIX classes, ``\\z``/``\\Z``, ``\\h``, ``\\e``,
nested character class unions (``[a[bc]]``). Python-only syntax (``(?P<...>``, conditionals,
``(?#...)``) is refused, as Java refuses it. Character class intersection (``&&``) is refused
with a message saying so. Topic names are ASCII letters, digits, ``.``, ``_`` and ``-``, so
Java's and Python's differences over Unicode and line terminators never change a match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# org.apache.kafka.common.internals.Topic: what the broker reports as internal topics.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
# org.apache.kafka.common.internals.Topic.MAX_NAME_LENGTH.
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")

# Java's POSIX character classes (\p{Lower} ...), US-ASCII only as in Java by default.
_POSIX_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": r"\x00-\x7f",
    "Alpha": "a-zA-Z",
    "IsAlphabetic": "a-zA-Z",
    "Digit": "0-9",
    "IsDigit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": r"!-/:-@\[-`{-~",
    "Graph": r"!-~",
    "Print": r" -~",
    "Blank": r" \t",
    "Cntrl": r"\x00-\x1f\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": r" \t\n\x0b\f\r",
    "IsWhite_Space": r" \t\n\x0b\f\r",
    "javaLowerCase": "a-z",
    "javaUpperCase": "A-Z",
    "L": "a-zA-Z",
    "IsL": "a-zA-Z",
    "IsLatin": "a-zA-Z",
}
_HORIZONTAL_SPACE = r" \t\xa0\u1680\u180e\u2000-\u200a\u202f\u205f\u3000"
# Inline flags Python's scoped groups know; Java's d (UNIX_LINES), u and U (Unicode case and
# classes) change nothing for ASCII names without line terminators and are dropped.
_SCOPED_FLAGS = frozenset("imsx")
_JAVA_FLAGS = frozenset("idmsuxU")


class JavaRegexError(ValueError):
    """A ``topics.regex`` that Java's ``Pattern.compile`` refuses (or that this translation
    cannot express): the message says what and where."""


def topic_name_error(name: str) -> str | None:
    """Kafka's ``Topic.validate`` message for an illegal topic name, or None if it is legal."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return (
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, Topic name: {name}"
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )
    return None


def distinct_topics(topics: Iterable[str]) -> list[str]:
    """``topics`` without empty entries and repeats, in their first order (Kafka's consumer
    subscribes to a set, so ``topics=v1,v1`` consumes v1 once)."""
    return list(dict.fromkeys(t for t in topics if t))


def matching_topics(pattern: re.Pattern[str], topics: Iterable[str]) -> list[str]:
    """The topics a pattern subscription consumes: whole-name matches, internal topics
    excluded (the Java consumer's ``exclude.internal.topics=true``), sorted."""
    return sorted(t for t in topics if t not in INTERNAL_TOPICS and pattern.fullmatch(t))


def compile_topics_regex(java_pattern: str) -> re.Pattern[str]:
    """Compile a Java regex; match topic names with ``fullmatch`` (Java's ``matches()``).

    Raises:
        JavaRegexError: Java would refuse the pattern, or it uses a construct (``&&``) that
            has no translation.
    """
    try:
        translated = _translate(java_pattern)
    except JavaRegexError as exc:
        raise JavaRegexError(_java_message(java_pattern, str(exc))) from None
    try:
        return re.compile(translated)
    except re.error as exc:
        same = translated == java_pattern  # re's positions are the translated pattern's
        reason = _java_reason(exc, java_pattern, same)
        raise JavaRegexError(_java_message(java_pattern, reason)) from None


def _java_reason(exc: re.error, pattern: str, same: bool) -> str:
    """Java's description and index (``Unclosed group near index 2``) for the mistakes both
    dialects refuse; re's own words for the rest."""
    message, pos = exc.msg, exc.pos
    if message.startswith("missing ), unterminated subpattern"):
        return f"Unclosed group near index {len(pattern)}"
    if message.startswith("missing >, unterminated name"):
        return f"named capturing group is missing trailing '>' near index {len(pattern)}"
    if message == "unterminated character set":
        return f"Unclosed character class near index {len(pattern) - 1}"
    if message == "unbalanced parenthesis" and same and pos:
        return f"Unmatched closing ')' near index {pos - 1}"
    if message in ("nothing to repeat", "multiple repeat") and same and pos is not None:
        return f"Dangling meta character '{pattern[pos]}' near index {pos}"
    if message == "min repeat greater than max repeat" and same and pos is not None:
        return f"Illegal repetition range near index {pattern.find('}', pos)}"
    return f"{message} near index {pos}"


def _java_message(pattern: str, reason: str) -> str:
    """``PatternSyntaxException.getMessage()``: the reason, the pattern on the next line and,
    when the index falls inside it, a caret under that character."""
    found = re.fullmatch(r"(.*) near index (-?\d+)", reason, re.DOTALL)
    if found is None:  # our own refusal (&&), not one of Java's
        return reason
    index = int(found.group(2))
    text = f"{reason}\n{pattern}"
    if 0 <= index < len(pattern):
        text += "\n" + " " * index + "^"
    return text


def _translate(p: str) -> str:
    out: list[str] = []
    # Per open group: the scoped flag groups opened inside it by a bare (?flags), which Java
    # applies to the rest of that group (every later alternative included).
    scoped: list[list[str]] = [[]]
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            piece, i = _escape(p, i, in_class=False)
            out.append(piece)
        elif c == "[":
            piece, i = _char_class(p, i)
            out.append(piece)
        elif c == "(":
            if p.startswith(("(?P", "(?(", "(?#"), i):
                raise JavaRegexError(f"Unknown inline modifier near index {i + 2}")
            if p.startswith("(?<", i) and not p.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                scoped.append([])
                i += 3
                continue
            flags = re.match(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])", p[i:])
            if flags and (flags.group(1) or flags.group(2)):
                on, off = flags.group(1), flags.group(2) or ""
                if set(on + off) - _JAVA_FLAGS:
                    raise JavaRegexError(f"Unknown inline modifier near index {i + 2}")
                on = "".join(f for f in on if f in _SCOPED_FLAGS)
                off = "".join(f for f in off if f in _SCOPED_FLAGS and f not in on)
                spec = on + ("-" + off if off else "")
                if flags.group(3) == ":":
                    out.append(f"(?{spec}:" if spec else "(?:")
                    scoped.append([])
                elif spec:
                    out.append(f"(?{spec}:")
                    scoped[-1].append(spec)
                i += flags.end()
                continue
            out.append(c)
            scoped.append([])
            i += 1
        elif c == ")":
            if len(scoped) == 1:
                raise JavaRegexError(f"Unmatched closing ')' near index {i - 1}")
            out.append(")" * len(scoped.pop()) + ")")
            i += 1
        elif c == "{":
            # Java reads every { outside a class as a bounded quantifier: {n}, {n,} or {n,m}
            # (Python takes a malformed one, or {,m}, literally or as {0,m}).
            bound = re.match(r"\{\d+(?:,\d*)?\}", p[i:])
            if bound is None:
                if re.match(r"\{\d+(?:,\d*)?$", p[i:]):
                    raise JavaRegexError(f"Unclosed counted closure near index {n}")
                raise JavaRegexError(f"Illegal repetition near index {i}")
            out.append(bound.group())
            i += bound.end()
        elif c == "|" and scoped[-1]:
            specs = scoped[-1]
            out.append(")" * len(specs) + "|" + "".join(f"(?{s}:" for s in specs))
            i += 1
        else:
            out.append(c)
            i += 1
    out.append(")" * len(scoped[-1]))
    return "".join(out)


def _escape(p: str, i: int, *, in_class: bool) -> tuple[str, int]:
    """Translate the escape starting at ``p[i]`` (a backslash); return it and the next index."""
    if i + 1 >= len(p):
        raise JavaRegexError(f"Unexpected internal error near index {i + 1}")
    c = p[i + 1]
    if c == "Q":
        end = p.find("\\E", i + 2)
        text = p[i + 2 :] if end < 0 else p[i + 2 : end]
        quoted = "".join("\\" + ch if not ch.isalnum() else ch for ch in text)
        return quoted, len(p) if end < 0 else end + 2
    if c == "E":
        return "", i + 2  # a \E without \Q is ignored, as Java does
    if c in "pP":
        m = re.match(r"\\[pP](?:\{(?:Is)?([A-Za-z_]+)\}|([A-Za-z]))", p[i:])
        if not m:
            raise JavaRegexError(f"Unknown character property name near index {i + 2}")
        name = m.group(1) or m.group(2)
        ranges = _POSIX_CLASSES.get(name) or _POSIX_CLASSES.get("Is" + name)
        if ranges is None:
            raise JavaRegexError(f"Unknown character property name {{{name}}} near index {i}")
        negate = c == "P"
        if in_class:
            if negate:
                raise JavaRegexError(
                    f"a negated property (\\P) inside a character class near index {i} "
                    "is not supported in topics.regex"
                )
            return ranges, i + m.end()
        return ("[^" if negate else "[") + ranges + "]", i + m.end()
    if c == "z":
        return r"\Z", i + 2
    if c == "Z":
        return r"(?=\n?\Z)", i + 2
    if c == "h":
        return (_HORIZONTAL_SPACE if in_class else f"[{_HORIZONTAL_SPACE}]"), i + 2
    if c == "H":
        if in_class:
            raise JavaRegexError(f"\\H inside a character class near index {i} is not supported")
        return f"[^{_HORIZONTAL_SPACE}]", i + 2
    if c == "e":
        return r"\x1b", i + 2
    if c == "k":
        m = re.match(r"\\k<([a-zA-Z][a-zA-Z0-9]*)>", p[i:])
        if not m:
            raise JavaRegexError(
                f"\\k is not followed by '<' for named capturing group near index {i + 2}"
            )
        return f"(?P={m.group(1)})", i + m.end()
    if c == "x" and p.startswith("{", i + 2):
        end = p.find("}", i + 3)
        if end < 0:
            raise JavaRegexError(f"Unclosed hexadecimal escape sequence near index {i + 2}")
        return f"\\U{int(p[i + 3 : end], 16):08x}", end + 1
    if c == "c" and i + 2 < len(p):
        return f"\\x{ord(p[i + 2]) ^ 64:02x}", i + 3
    return p[i : i + 2], i + 2


def _char_class(p: str, i: int) -> tuple[str, int]:
    """Translate the character class starting at ``p[i]`` (``[``), nested unions flattened."""
    out = ["["]
    i += 1
    if p.startswith("^", i):
        out.append("^")
        i += 1
    if p.startswith("]", i):  # a ] first is a literal, in Java as in Python
        out.append(r"\]")
        i += 1
    while i < len(p):
        c = p[i]
        if c == "]":
            out.append("]")
            return "".join(out), i + 1
        if c == "\\":
            piece, i = _escape(p, i, in_class=True)
            out.append(piece)
        elif p.startswith("&&", i):
            raise JavaRegexError(
                f"character class intersection (&&) near index {i} is not supported in "
                "topics.regex; write the class without it"
            )
        elif c == "[":
            if p.startswith("[^", i):
                raise JavaRegexError(
                    f"a negated nested character class near index {i} is not supported in "
                    "topics.regex; write the class without it"
                )
            inner, i = _char_class(p, i)
            out.append(inner[1:-1])  # a union: its members join the outer class
        else:
            out.append(c)
            i += 1
    raise JavaRegexError(f"Unclosed character class near index {len(p) - 1}")
