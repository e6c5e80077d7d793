"""Source connector offsets over REST (KIP-875): which partitions and offsets may be written.

Kafka checks each partition and offset map with ``OffsetUtils.validateFormat`` before the
connector's ``alterOffsets`` is called or anything is written: keys are strings, values are
null or of a primitive Connect type. Its REST layer (Jackson) reads a JSON integer as an
Integer or Long when it fits and as a BigInteger otherwise, which no Connect type holds, so an
integer beyond 64 bits is refused there; a JSON object is a MAP and an array an ARRAY, neither
primitive. Kafka answers these with a 500; ours are 400s with Kafka's message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from core.herder import BadRequestError

# The range of the Java long a JSON integer must fit to be an INT64 (Jackson's Long).
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def check_offset_format(data: Mapping[Any, Any] | None) -> None:
    """Refuse ``data`` (a source partition or offset) as Kafka's OffsetUtils.validateFormat
    does, naming the field at fault.

    A float that is not finite (``NaN``, ``Infinity``, or ``1e400``, which overflows a
    double) is refused too: Python's JSON parser accepts all three (Kafka's refuses the
    first two), and written to the offsets topic they are JSON no other reader takes.

    Raises:
        BadRequestError: a key is not a string or a value is not a primitive.
    """
    if data is None:
        return
    for key, value in data.items():
        if not isinstance(key, str):
            raise BadRequestError("Offsets may only use String keys")
        if value is None or isinstance(value, (bool, str, bytes)):
            continue
        if isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                raise BadRequestError(_not_primitive(key, "class java.math.BigInteger"))
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise BadRequestError(
                    f"Offsets may only contain primitive types as values, but field {key} "
                    f"contains {value}, which is not a finite number"
                )
        elif isinstance(value, Mapping):
            raise BadRequestError(_not_primitive(key, "MAP"))
        elif isinstance(value, (list, tuple)):
            raise BadRequestError(_not_primitive(key, "ARRAY"))
        else:
            raise BadRequestError(_not_primitive(key, f"class {type(value).__name__}"))


def _not_primitive(key: str, what: str) -> str:
    return f"Offsets may only contain primitive types as values, but field {key} contains {what}"
