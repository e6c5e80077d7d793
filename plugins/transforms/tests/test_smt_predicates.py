from __future__ import annotations

import pytest
from copycat_transforms import HasHeaderKey, RecordIsTombstone, TopicNameMatches

from plugin_api import ConfigException, SinkRecord


def rec(topic="my-topic", value="v", headers=None) -> SinkRecord:
    return SinkRecord(topic, 0, None, None, None, value, 0, headers=headers)


def configured(cls, config):
    predicate = cls()
    predicate.configure(config)
    return predicate


def test_topic_name_matches_whole_topic() -> None:
    p = configured(TopicNameMatches, {"pattern": "my-.*"})
    assert p.test(rec("my-topic"))
    assert not p.test(rec("your-topic"))
    assert not configured(TopicNameMatches, {"pattern": "my"}).test(rec("my-topic"))
    assert configured(TopicNameMatches, {"pattern": "(?<env>prod|dev)\\..*"}).test(rec("prod.x"))


@pytest.mark.parametrize("config", [{}, {"pattern": ""}, {"pattern": "["}])
def test_topic_name_matches_bad_pattern(config) -> None:
    with pytest.raises(ConfigException) as info:
        TopicNameMatches().configure(config)
    assert info.value.name == "pattern"
    errors = {r.name: r.error_messages for r in TopicNameMatches().config().validate(config)}
    assert errors["pattern"]


def test_has_header_key() -> None:
    p = configured(HasHeaderKey, {"name": "trace"})
    assert p.test(rec(headers=[("trace", None)]))
    assert not p.test(rec(headers=[("other", 1)]))
    assert not p.test(rec())
    with pytest.raises(ConfigException) as info:
        HasHeaderKey().configure({"name": ""})
    assert info.value.name == "name"


def test_record_is_tombstone() -> None:
    p = configured(RecordIsTombstone, {})
    assert p.test(rec(value=None))
    assert not p.test(rec(value={}))


def test_aliases() -> None:
    prefix = "org.apache.kafka.connect.transforms.predicates."
    for cls in (TopicNameMatches, HasHeaderKey, RecordIsTombstone):
        assert cls.KAFKA_CLASS_ALIASES == (prefix + cls.__name__,)
