"""Java ``SimpleDateFormat`` patterns (``yyyyMMdd``, ``yyyy-MM-dd'T'HH:mm:ss.SSSZ``) in UTC.

TimestampRouter and TimestampConverter take their formats in Java's pattern
language, and Kafka always formats and parses them in UTC. :class:`JavaDateFormat`
implements that language for instants given as epoch milliseconds:

* ``G`` era, ``y`` year, ``M``/``L`` month (``MMM`` = Jan, ``MMMM`` = January),
  ``d`` day of month, ``D`` day of year, ``E`` day name, ``u`` day number (1 = Monday),
  ``F`` day-of-week-in-month, ``a`` AM/PM, ``H`` ``k`` ``K`` ``h`` hours, ``m``
  minutes, ``s`` seconds, ``S`` milliseconds, ``z``/``Z``/``X`` time zone;
* ``'quoted text'`` and ``''`` for a single quote;
* ``Y`` (week year) and ``w``/``W`` (week of year/month) follow the en-US weeks of
  Kafka Connect's JVM: a week starts on Sunday and week 1 of a year (or month) is the
  one holding its first day, so 2024-12-31 is in week 1 of week year 2025.

Parsing, like Java's, needs the text to start with the pattern (trailing text is
ignored), skips spaces and tabs before a number (not before a name), takes an ISO 8601
zone (``Z``, ``+01``, ``+01:30``) for ``X`` and an offset (``+0130``, ``GMT+01:00``) or
an en-US zone name (``PST``, ``Pacific Standard Time``, ``CET``) for ``z`` and ``Z``, reads
exactly N digits for a numeric field directly followed by another
numeric field (``yyyyMMdd``), and maps two-digit ``yy`` years into the century
that starts 80 years ago. Unlike Java's lenient default, out-of-range fields
(month 13, hour 24 for ``H``, day of year 400) are rejected instead of rolled over.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from plugin_api import Timestamp

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ONE_MS = datetime.timedelta(milliseconds=1)


def epoch_datetime(epoch_ms: int) -> datetime.datetime:
    """The UTC datetime ``epoch_ms`` milliseconds after the epoch.

    Raises:
        DataException: the instant is outside the years 1-9999 that Python's datetime holds
            (Kafka's java.util.Date holds it); the message names the value.
    """
    try:
        return _EPOCH + datetime.timedelta(milliseconds=epoch_ms)
    except OverflowError:
        # plugin_api's conversion raises the error that names the value.
        return Timestamp.to_logical(Timestamp.SCHEMA, epoch_ms)


PATTERN_LETTERS = frozenset("GyYMLwWDdFEuaHkKhmsSzZX")
_NUMERIC = frozenset("yYMLwWDdFuHkKhmsS")
_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
# Zone names SimpleDateFormat parses in the en-US locale, as fixed offsets in minutes (a
# standard-time name is standard time all year, a daylight one daylight time).
_ZONE_OFFSETS = {
    "UTC": 0,
    "GMT": 0,
    "Coordinated Universal Time": 0,
    "Greenwich Mean Time": 0,
    "CET": 60,
    "CEST": 120,
    "Central European Standard Time": 60,
    "Central European Summer Time": 120,
    "Eastern Standard Time": -300,
    "Eastern Daylight Time": -240,
    "Central Standard Time": -360,
    "Central Daylight Time": -300,
    "Mountain Standard Time": -420,
    "Mountain Daylight Time": -360,
    "Pacific Standard Time": -480,
    "Pacific Daylight Time": -420,
    "EST": -300,
    "EDT": -240,
    "CST": -360,
    "CDT": -300,
    "MST": -420,
    "MDT": -360,
    "PST": -480,
    "PDT": -420,
}
# SimpleDateFormat resolves a two-digit year into the 100 years starting 80 years ago.
_TWO_DIGIT_YEAR_LOOKBACK = 80


@dataclass(frozen=True)
class _Field:
    letter: str
    count: int


_Token = _Field | str


def _tokenize(pattern: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            if pattern.startswith("''", i):
                tokens.append("'")
                i += 2
                continue
            end = i + 1
            text: list[str] = []
            while True:
                if end >= n:
                    raise ValueError("Unterminated quote")
                if pattern[end] == "'":
                    if pattern.startswith("''", end):
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            tokens.append("".join(text))
            i = end + 1
        elif ("a" <= ch <= "z") or ("A" <= ch <= "Z"):
            if ch not in PATTERN_LETTERS:
                raise ValueError(f"Illegal pattern character '{ch}'")
            j = i
            while j < n and pattern[j] == ch:
                j += 1
            if ch == "X" and j - i > 3:  # X, XX and XXX are the ISO 8601 zone forms
                raise ValueError(f"invalid ISO 8601 format: length={j - i}")
            tokens.append(_Field(ch, j - i))
            i = j
        else:
            tokens.append(ch)
            i += 1
    return tokens


def _pad(number: int, width: int) -> str:
    sign = "-" if number < 0 else ""
    return sign + str(abs(number)).zfill(width)


class JavaDateFormat:
    """A compiled SimpleDateFormat pattern that formats and parses epoch milliseconds in UTC."""

    __slots__ = ("pattern", "_tokens", "_regex", "_groups")

    def __init__(self, pattern: str) -> None:
        """Compile ``pattern``.

        Raises:
            ValueError: For an unknown pattern letter, more than three ``X`` or an
                unterminated quote.
        """
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        self._regex: re.Pattern[str] | None = None
        self._groups: list[_Field] = []

    # -- formatting ------------------------------------------------------------------------

    def format(self, epoch_ms: int) -> str:
        """Format the instant ``epoch_ms`` milliseconds after the epoch, in UTC."""
        moment = epoch_datetime(epoch_ms)
        millis = moment.microsecond // 1000
        return "".join(
            tok if isinstance(tok, str) else self._format_field(tok, moment, millis)
            for tok in self._tokens
        )

    @staticmethod
    def _format_field(tok: _Field, moment: datetime.datetime, millis: int) -> str:
        letter, count = tok.letter, tok.count
        if letter == "G":
            return "AD"
        if letter in "yY":
            year = moment.year if letter == "y" else _week_date(moment.date())[0]
            return _pad(year % 100, 2) if count == 2 else _pad(year, count)
        if letter in "ML":
            if count >= 4:
                return _MONTHS[moment.month - 1]
            if count == 3:
                return _MONTHS[moment.month - 1][:3]
            return _pad(moment.month, count)
        if letter == "E":
            name = _DAYS[moment.weekday()]
            return name if count >= 4 else name[:3]
        if letter == "a":
            return "AM" if moment.hour < 12 else "PM"
        if letter == "z":
            return "Coordinated Universal Time" if count >= 4 else "UTC"
        if letter == "Z":
            return "+0000"
        if letter == "X":
            return "Z"
        number = {
            "w": lambda: _week_date(moment.date())[1],
            "W": lambda: _weeks_between(moment.date().replace(day=1), moment.date()) + 1,
            "D": lambda: moment.timetuple().tm_yday,
            "d": lambda: moment.day,
            "F": lambda: (moment.day - 1) // 7 + 1,
            "u": lambda: moment.isoweekday(),
            "H": lambda: moment.hour,
            "k": lambda: moment.hour or 24,
            "K": lambda: moment.hour % 12,
            "h": lambda: moment.hour % 12 or 12,
            "m": lambda: moment.minute,
            "s": lambda: moment.second,
            "S": lambda: millis,
        }[letter]()
        return _pad(number, count)

    # -- parsing ---------------------------------------------------------------------------

    def _compile(self) -> re.Pattern[str]:
        parts: list[str] = []
        groups: list[_Field] = []
        tokens = self._tokens
        for index, tok in enumerate(tokens):
            if isinstance(tok, str):
                parts.append(re.escape(tok))
                continue
            letter, count = tok.letter, tok.count
            nxt = tokens[index + 1] if index + 1 < len(tokens) else None
            abutting = isinstance(nxt, _Field) and nxt.letter in _NUMERIC
            if letter in _NUMERIC and not (letter in "ML" and count >= 3):
                # SimpleDateFormat skips spaces and tabs before a number (not before text).
                parts.append(f"[ \\t]*(\\d{{{count}}})" if abutting else "[ \\t]*([+-]?\\d+)")
            elif letter in "ML":
                parts.append("(" + "|".join(_MONTHS) + "|" + "|".join(m[:3] for m in _MONTHS) + ")")
            elif letter == "E":
                parts.append("(" + "|".join(_DAYS) + "|" + "|".join(d[:3] for d in _DAYS) + ")")
            elif letter == "a":
                parts.append("(AM|PM)")
            elif letter == "G":
                parts.append("(AD|BC)")
            elif letter == "X":  # ISO 8601 only: Z, +01, +0130, +01:30
                parts.append("(Z|[+-]\\d{2}(?::?\\d{2})?)")
            else:  # z and Z: an offset, GMT+01:00 or a zone name, not a bare Z
                names = sorted(_ZONE_OFFSETS, key=len, reverse=True)
                parts.append("((?:GMT|UTC)?[+-]\\d{1,2}(?::?\\d{2})?|" + "|".join(names) + ")")
            groups.append(tok)
        self._groups = groups
        return re.compile("".join(parts), re.IGNORECASE)

    def parse(self, text: str) -> int:
        """Parse ``text`` into epoch milliseconds.

        Raises:
            ValueError: If ``text`` does not start with a date in this pattern.
        """
        if self._regex is None:
            self._regex = self._compile()
        match = self._regex.match(text)
        if match is None:
            raise ValueError(f"Unparseable date: {text!r}")
        year, month, day, hour, minute, second, millis = 1970, 1, 1, 0, 0, 0, 0
        day_of_year: int | None = None
        week_year: int | None = None
        week: int | None = None
        day_of_week: int | None = None  # 0 = Sunday
        day_given = False
        pm: bool | None = None
        hour12: int | None = None
        offset_minutes = 0
        for tok, raw in zip(self._groups, match.groups(), strict=True):
            letter = tok.letter
            if letter == "y":
                year = int(raw)
                if tok.count <= 2 and len(raw) == 2 and raw.isdigit():
                    year = _resolve_two_digit_year(year)
            elif letter in "ML":
                month = _month_number(raw) if not raw.lstrip("+-").isdigit() else int(raw)
            elif letter == "d":
                day = int(raw)
                day_given = True
            elif letter == "D":
                day_of_year = int(raw)
            elif letter == "Y":
                week_year = int(raw)
                if tok.count <= 2 and len(raw) == 2 and raw.isdigit():
                    week_year = _resolve_two_digit_year(week_year)
            elif letter == "w":
                week = int(raw)
            elif letter == "E":
                day_of_week = (_day_number(raw) + 1) % 7
            elif letter == "u":
                day_of_week = int(raw) % 7
            elif letter == "H":
                hour = int(raw)
            elif letter == "k":
                hour = int(raw) % 24
            elif letter in "Kh":
                hour12 = int(raw) % 12
            elif letter == "a":
                pm = raw.upper() == "PM"
            elif letter == "m":
                minute = int(raw)
            elif letter == "s":
                second = int(raw)
            elif letter == "S":
                millis = int(raw)
            elif letter in "zZX":
                offset_minutes = _offset_minutes(raw)
            # G, W and F are ignored, as are E and u next to a day of month: Java's
            # calendar takes the day of month then.
        if hour12 is not None:
            hour = hour12 + (12 if pm else 0)
        elif pm is not None and hour < 12 and pm:
            hour += 12
        if week is not None and not day_given and day_of_year is None:
            # A week date (YYYY-'W'ww, with E or u for the day, else the week's Sunday).
            first = _week_start(datetime.date(week_year if week_year is not None else year, 1, 1))
            base = first + datetime.timedelta(days=(week - 1) * 7 + (day_of_week or 0))
            year, month, day = base.year, base.month, base.day
        elif week_year is not None and not day_given and day_of_year is None:
            year = week_year
        if day_of_year is not None:
            base = datetime.date(year, 1, 1) + datetime.timedelta(days=day_of_year - 1)
            if day_of_year < 1 or base.year != year:
                raise ValueError(f"Day of year {day_of_year} is out of range for {year}")
            month, day = base.month, base.day
        moment = datetime.datetime(year, month, day, hour, minute, second, tzinfo=datetime.UTC)
        moment -= datetime.timedelta(minutes=offset_minutes)
        return (moment - _EPOCH) // _ONE_MS + millis


def _week_start(day: datetime.date) -> datetime.date:
    """The Sunday on or before ``day``."""
    return day - datetime.timedelta(days=(day.weekday() + 1) % 7)


def _weeks_between(first: datetime.date, day: datetime.date) -> int:
    return (_week_start(day) - _week_start(first)).days // 7


def _week_date(day: datetime.date) -> tuple[int, int]:
    """The en-US week year and week of year of ``day``: the last days of December that
    share a week with the next January 1st are in week 1 of the next year."""
    following = datetime.date(day.year + 1, 1, 1)
    if _week_start(day) == _week_start(following):
        return day.year + 1, 1
    return day.year, _weeks_between(datetime.date(day.year, 1, 1), day) + 1


def _day_number(name: str) -> int:
    """0 for Monday ... 6 for Sunday."""
    folded = name.casefold()
    for i, day in enumerate(_DAYS):
        if folded in (day.casefold(), day[:3].casefold()):
            return i
    raise ValueError(f"Unknown day {name!r}")


def _month_number(name: str) -> int:
    folded = name.casefold()
    for i, month in enumerate(_MONTHS):
        if folded in (month.casefold(), month[:3].casefold()):
            return i + 1
    raise ValueError(f"Unknown month {name!r}")


def _offset_minutes(raw: str) -> int:
    text = raw.upper()
    for prefix in ("GMT", "UTC"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if text in ("", "Z"):
        return 0
    for name, minutes in _ZONE_OFFSETS.items():
        if text == name.upper():
            return minutes
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    if len(digits) <= 2:
        hours, minutes = int(digits), 0
    else:
        hours, minutes = int(digits[:-2]), int(digits[-2:])
    return sign * (hours * 60 + minutes)


def _resolve_two_digit_year(two_digits: int) -> int:
    start = datetime.datetime.now(datetime.UTC).year - _TWO_DIGIT_YEAR_LOOKBACK
    year = start - start % 100 + two_digits
    return year + 100 if year < start else year
