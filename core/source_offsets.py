"""Source connector offsets over REST (KIP-875): which partitions and offsets may be written.

Kafka checks each partition and offset map with ``OffsetUtils.validateFormat`` before the
connector's ``alterOffsets`` is called or anything is written: keys are strings, values are
null or of a primitive Connect type. Its REST layer (Jackson) reads a JSON integer as an
Integer or Long when it fits and as a BigInteger otherwise, which no Connect type holds, so an
integer beyond 64 bits is refused there; a JSON object is a MAP and an array an ARRAY, neither
primitive. Kafka answers these with a 500; ours are 400s with Kafka's message.

The check is :func:`plugin_api.validate_offset_format`, the one a source task's offsets pass
in its plugin host before they are stored (``copycat_pipeline``), so REST accepts exactly
what a task may store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.herder import BadRequestError
from plugin_api import DataException, validate_offset_format


def check_offset_format(data: Mapping[Any, Any] | None) -> None:
    """Refuse ``data`` (a source partition or offset) as Kafka's OffsetUtils.validateFormat
    does, naming the field at fault.

    A float that is not finite (``NaN``, ``Infinity``, or ``1e400``, which overflows a
    double) is refused too: Python's JSON parser accepts all three (Kafka's refuses the
    first two), and written to the offsets topic they are JSON no other reader takes.

    Raises:
        BadRequestError: a key is not a string or a value is not a primitive.
    """
    try:
        validate_offset_format(data)
    except DataException as exc:
        raise BadRequestError(str(exc)) from exc
