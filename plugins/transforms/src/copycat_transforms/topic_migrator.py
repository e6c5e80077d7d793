"""KafkaConnectTopicMigrator: re-key records of Connect's internal topics for another cluster.

The migration transform of the KIP on sharing Kafka Connect's internal topics
(``../shared/seeds/kip-share-internal-topics.txt``). A cluster that shares its config, offset
and status topics writes every key as ``<group.id>.<key>``; mirroring one cluster's records
into topics shared by others (or renaming a cluster) means rewriting that prefix. Put this
transform in the mirroring pipeline (a sink/source pair, MirrorMaker) with the record keys as
strings or bytes (StringConverter, ByteArrayConverter); values pass through untouched,
tombstones included.

Settings (the KIP's):

* ``topic.type`` (required): ``config``, ``offset`` or ``status``: which internal topic the
  records come from, so the transform knows its key forms;
* ``destination.cluster.name`` (required): the ``group.id`` the keys get as prefix;
* ``source.cluster.names``: clusters whose prefixed records are taken (other prefixed records
  are dropped);
* ``old.client`` (default true): also take unprefixed records, written by a cluster without
  topic sharing (the usual migration: a cluster turning sharing on);
* ``migrate.job`` / ``job.name``: take only one connector's records (its config, task configs,
  target state and restarts; its statuses and topic records; its offsets).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from copycat_transforms._util import VersionedPlugin, add_copier
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    Importance,
    NonEmptyString,
    Transformation,
    ValidString,
)

__all__ = ["KafkaConnectTopicMigrator"]

SOURCE_CLUSTERS_CONFIG = "source.cluster.names"
DESTINATION_CONFIG = "destination.cluster.name"
TOPIC_TYPE_CONFIG = "topic.type"
MIGRATE_JOB_CONFIG = "migrate.job"
JOB_NAME_CONFIG = "job.name"
OLD_CLIENT_CONFIG = "old.client"
SEPARATOR = "."

CONFIG_DEF = (
    ConfigDef()
    .define(
        SOURCE_CLUSTERS_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.HIGH,
        documentation="Clusters (group ids) whose records are migrated; empty when migrating "
        "an old client's (unprefixed) records or a single job.",
    )
    .define(
        DESTINATION_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="The cluster (group id) the migrated keys are prefixed with.",
    )
    .define(
        TOPIC_TYPE_CONFIG,
        ConfigType.STRING,
        validator=ValidString.in_("config", "offset", "status"),
        importance=Importance.HIGH,
        documentation="Which internal topic the records come from: config, offset or status.",
    )
    .define(
        MIGRATE_JOB_CONFIG,
        ConfigType.BOOLEAN,
        False,
        importance=Importance.MEDIUM,
        documentation="Migrate only the records of the connector named by job.name.",
    )
    .define(
        JOB_NAME_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="The connector whose records are migrated when migrate.job is true.",
    )
    .define(
        OLD_CLIENT_CONFIG,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Also migrate unprefixed records, written by a cluster that does not "
        "share its topics.",
    )
)

# Key forms of each internal topic, each with where the connector name starts.
_CONFIG_FORMS = (
    "connector-",
    "target-state-",
    "commit-",
    "restart-connector-",
    "tasks-fencing-",
    "task-",
    "logger-cluster-",
)
_CONFIG_PLAIN_KEYS = ("session-key",)
_STATUS_FORMS = ("status-connector-", "status-task-", "status-topic-")


def _is_plain(key: str, topic_type: str) -> bool:
    """Whether ``key`` is an unprefixed key of that topic (written without sharing)."""
    if topic_type == "offset":
        return key.startswith("[")
    if topic_type == "config":
        return key.startswith(_CONFIG_FORMS) or key in _CONFIG_PLAIN_KEYS
    return key.startswith(_STATUS_FORMS)


def _belongs_to(key: str, topic_type: str, job: str) -> bool:
    """Whether the (unprefixed) ``key`` is a record of connector ``job``."""
    if topic_type == "offset":
        try:
            parsed = json.loads(key)
        except ValueError:
            return False
        return isinstance(parsed, list) and bool(parsed) and parsed[0] == job
    if topic_type == "config":
        for form in ("connector-", "target-state-", "commit-", "restart-connector-"):
            if key == form + job:
                return True
        if key == f"tasks-fencing-{job}":
            return True
        rest = key.removeprefix(f"task-{job}-")
        return rest != key and rest.isdigit()
    if key == f"status-connector-{job}" or key.endswith(f":connector-{job}"):
        return True
    rest = key.removeprefix(f"status-task-{job}-")
    return rest != key and rest.isdigit()


class KafkaConnectTopicMigrator(VersionedPlugin, Transformation[ConnectRecord]):
    """Rewrite internal-topic keys to ``<destination.cluster.name>.<key>``; drop the records
    that are not to be migrated (see the module docstring)."""

    # The KIP is under discussion: Apache Kafka has no class of this name to stand in for.
    KAFKA_CLASS_ALIASES: tuple[str, ...] = ()

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._sources: tuple[str, ...] = ()
        self._destination = ""
        self._topic_type = "config"
        self._job: str | None = None
        self._old_client = True
        self._copiers: dict[type, Callable[..., Any]] = {}

    def config(self) -> ConfigDef:
        """Return the KIP's six settings."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the settings.

        Raises:
            ConfigException: naming ``job.name`` (migrate.job without a job), or
                ``source.cluster.names`` (nothing would be migrated).
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._sources = tuple(s.strip() for s in conf.get_list(SOURCE_CLUSTERS_CONFIG) or () if s)
        self._destination = conf.get_string(DESTINATION_CONFIG) or ""
        self._topic_type = conf.get_string(TOPIC_TYPE_CONFIG) or "config"
        self._old_client = bool(conf.get_boolean(OLD_CLIENT_CONFIG))
        if conf.get_boolean(MIGRATE_JOB_CONFIG):
            job = conf.get_string(JOB_NAME_CONFIG) or ""
            if not job:
                raise ConfigException(
                    JOB_NAME_CONFIG, job, "a job name is required when migrate.job is true"
                )
            self._job = job
        if not self._old_client and not self._sources:
            raise ConfigException(
                SOURCE_CLUSTERS_CONFIG,
                "",
                "with old.client=false, name the clusters to migrate: nothing would be",
            )

    def _logical(self, key: str) -> str | None:
        if _is_plain(key, self._topic_type):
            return key if self._old_client else None
        for cluster in self._sources:
            prefix = cluster + SEPARATOR
            if key.startswith(prefix):
                return key[len(prefix) :]
        return None

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """The record with its key moved to the destination cluster, or None (dropped)."""
        raw = record.key
        if isinstance(raw, bytes | bytearray):
            try:
                key = bytes(raw).decode()
            except UnicodeDecodeError:
                return None
        elif isinstance(raw, str):
            key = raw
        else:
            return None  # no key, or not a Connect internal topic record
        logical = self._logical(key)
        if logical is None:
            return None
        if self._job is not None and not _belongs_to(logical, self._topic_type, self._job):
            return None
        new_key: str | bytes = self._destination + SEPARATOR + logical
        if not isinstance(raw, str):
            new_key = new_key.encode()
        copy = self._copiers.get(type(record)) or add_copier(self._copiers, record, "key")
        return copy(record, new_key)  # type: ignore[no-any-return]
