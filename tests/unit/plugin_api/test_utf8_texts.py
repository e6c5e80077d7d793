"""Utf8Texts: a column of text held as its UTF-8 bytes, against plain lists of ``str``.

Whatever reads it sees the texts; whoever takes :attr:`Utf8Texts.encoded` gets exactly what
encoding those texts as UTF-8 gives, so only valid UTF-8 may go in, and ``lines()`` splits a
buffer exactly as ``bytes.split(b"\\n")`` does, on both of its ways of finding lines.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from plugin_api.batches import _LONG_LINE_BYTES

from plugin_api import Utf8Texts

PROPERTY = settings(max_examples=200, deadline=None)

# Text of every plane (st.text() leaves out lone surrogates, which UTF-8 cannot carry).
texts = st.lists(st.text(max_size=12), max_size=20)
# Bytes that are often UTF-8 and often not: ASCII, multi-byte characters, cut ones, invalid.
pieces = st.sampled_from(
    [
        b"a",
        b"z",
        b" ",
        b"\xc3\xa9",
        b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80",
        b"\xc3",
        b"\xff",
        b"\x80",
        b"\x00",
        b"\r",
    ]
)
raw = st.lists(pieces, max_size=10).map(b"".join)


@PROPERTY
@given(texts=texts, start=st.integers(-25, 25), stop=st.integers(-25, 25))
def test_texts_read_as_the_list_they_encode(texts: list[str], start: int, stop: int) -> None:
    column = Utf8Texts([text.encode() for text in texts])
    assert len(column) == len(texts)
    assert column.encoded == [text.encode() for text in texts]
    assert column == texts and column == tuple(texts) and list(column) == texts
    assert list(reversed(column)) == texts[::-1]
    part = column[start:stop]
    assert type(part) is Utf8Texts and part == texts[start:stop]
    if texts:
        assert column[-1] == texts[-1] and texts[0] in column
    assert pickle.loads(pickle.dumps(column)) == column
    assert column + ["x"] == [*texts, "x"] and ["x"] + column == ["x", *texts]


def test_encoded_is_a_copy_and_the_texts_are_decoded_once() -> None:
    column = Utf8Texts([b"a", "\u00e9".encode()])
    taken = column.encoded
    taken.append(b"b")
    assert column.encoded == [b"a", b"\xc3\xa9"]
    assert column[1] is column[1] == "\u00e9"
    with pytest.raises(TypeError):
        hash(column)


@PROPERTY
@given(entries=st.lists(raw, max_size=8))
# A character split across two entries: each is invalid, their concatenation valid (the check
# of the joined column took them, and reading the texts failed later).
@example(entries=[b"\xc3", b"\x80"])
@example(entries=[b"ok\xe2\x82", b"\xac"])
def test_only_valid_utf8_is_taken_and_the_entry_at_fault_is_named(entries: list[bytes]) -> None:
    bad = []
    for index, entry in enumerate(entries):
        try:
            entry.decode()
        except UnicodeDecodeError:
            bad.append(index)
    if not bad:
        assert Utf8Texts(entries) == [entry.decode() for entry in entries]
        return
    with pytest.raises(UnicodeDecodeError, match=f"entry {bad[0]}:"):
        Utf8Texts(entries)


@pytest.mark.parametrize("entry", [None, "text", bytearray(b"a"), memoryview(b"a"), 7])
def test_anything_but_bytes_is_refused_by_index(entry: object) -> None:
    with pytest.raises(TypeError, match="entry 1 is"):
        Utf8Texts([b"ok", entry])  # type: ignore[list-item]


# Lines short and long, so that both ways of finding lines (split, readlines) are taken.
lines = st.lists(
    st.one_of(
        raw, st.tuples(raw, st.integers(1, 3)).map(lambda p: p[0] * (_LONG_LINE_BYTES * p[1]))
    ),
    max_size=12,
)


@PROPERTY
@given(lines=lines, rest=raw, newline_at_end=st.booleans())
def test_lines_split_a_buffer_as_bytes_split_does(
    lines: list[bytes], rest: bytes, newline_at_end: bool
) -> None:
    data = b"".join(line + b"\n" for line in lines) + (
        b"" if newline_at_end else rest.replace(b"\n", b"")
    )
    *complete, after = data.split(b"\n")
    found = Utf8Texts.lines(data)
    try:
        b"\n".join(complete).decode()
    except UnicodeDecodeError:
        assert found is None
        return
    assert found is not None
    column, remainder = found
    assert column.encoded == complete and remainder == after
    assert list(column) == [line.decode() for line in complete]


@PROPERTY
@given(lines=lines, rest=raw, newline_at_end=st.booleans(), percent=st.integers(0, 100))
def test_lines_after_a_prefix_are_the_lines_of_both_together(
    lines: list[bytes], rest: bytes, newline_at_end: bool, percent: int
) -> None:
    """A file source hands over what its last buffer left after its last newline as the prefix
    of the next; any cut, even one inside a line or a character, finds the same lines."""
    data = b"".join(line + b"\n" for line in lines) + (
        b"" if newline_at_end else rest.replace(b"\n", b"")
    )
    cut = len(data) * percent // 100
    whole = Utf8Texts.lines(data)
    found = Utf8Texts.lines(data[cut:], data[:cut])
    if whole is None:
        assert found is None
        return
    assert found is not None
    assert found[0].encoded == whole[0].encoded and found[1] == whole[1]
