"""KIP-507 signatures and session keys in Kafka Connect's formats (core.request_signing)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from core.request_signing import (
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    InvalidSignatureHeaders,
    RequestSignature,
    SessionKey,
    generate_key,
    sign,
)

KEY = SessionKey(bytes(range(32)), "HmacSHA256", 1_700_000_000_000)
BODY = b'[{"task.class":"x"}]'


def test_signature_headers_are_kafkas() -> None:
    headers = sign(KEY, BODY, "HmacSHA256")
    expected = hmac.new(KEY.key, BODY, hashlib.sha256).digest()
    assert headers == {
        "X-Connect-Authorization": base64.b64encode(expected).decode(),
        "X-Connect-Request-Signature-Algorithm": "HmacSHA256",
    }


def test_a_signature_verifies_only_with_its_key_and_body() -> None:
    headers = sign(KEY, BODY, "HmacSHA512")
    received = RequestSignature.from_headers(BODY, headers)
    assert received is not None and received.algorithm == "HmacSHA512"
    assert received.is_valid(KEY)
    assert not received.is_valid(SessionKey(b"k" * 32, "HmacSHA256", 0))
    tampered = RequestSignature.from_headers(BODY + b" ", headers)
    assert tampered is not None and not tampered.is_valid(KEY)


def test_missing_headers_mean_unsigned_and_bad_ones_are_refused() -> None:
    assert RequestSignature.from_headers(BODY, {}) is None
    assert RequestSignature.from_headers(BODY, {SIGNATURE_HEADER: "AAAA"}) is None
    with pytest.raises(InvalidSignatureHeaders, match="HmacFoo Mac not available"):
        RequestSignature.from_headers(
            BODY, {SIGNATURE_HEADER: "AAAA", SIGNATURE_ALGORITHM_HEADER: "HmacFoo"}
        )
    with pytest.raises(InvalidSignatureHeaders, match="base64"):
        RequestSignature.from_headers(
            BODY, {SIGNATURE_HEADER: "not base64!", SIGNATURE_ALGORITHM_HEADER: "HmacSHA256"}
        )


def test_the_session_key_record_is_kafkas_and_round_trips() -> None:
    record = KEY.to_record()
    assert record == {
        "key": base64.b64encode(bytes(range(32))).decode(),
        "algorithm": "HmacSHA256",
        "creation-timestamp": 1_700_000_000_000,
    }
    assert SessionKey.from_record(record) == KEY
    for broken, field in [
        ({**record, "key": 1}, "'key'"),
        ({**record, "algorithm": None}, "'algorithm'"),
        ({**record, "creation-timestamp": "1"}, "'creation-timestamp'"),
    ]:
        with pytest.raises(ValueError, match=field):
            SessionKey.from_record(broken)


def test_generated_keys_have_the_jca_default_sizes_and_never_show_in_a_repr() -> None:
    assert len(generate_key("HmacSHA256", None, 0).key) == 32
    assert len(generate_key("HmacSHA1", None, 0).key) == 64
    assert len(generate_key("HmacSHA256", 128, 0).key) == 16
    assert str(KEY.key) not in repr(KEY) and "key=" not in repr(KEY)
