"""The registry's state and the operations on it, independent of HTTP and Kafka.

Every change is expressed as records for the ``_schemas`` topic, in Confluent's key and
value layout; the caller persists them and then :meth:`RegistryState.apply`-s them, which is
also how a restarted registry replays the topic. So the state after a restart is exactly
the state the records describe.

Keys and their values:

* ``{"keytype":"SCHEMA","subject":s,"version":v,"magic":1}``:
  ``{"subject","version","id","schema","deleted"}``
* ``{"keytype":"CONFIG","subject":s|null,"magic":0}``:
  ``{"compatibilityLevel": level}`` (null: removed)
* ``{"keytype":"NOOP","magic":0}``: none (read-to-end marker, see :mod:`._store`)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.dev.schema_registry import compat

__all__ = ["Record", "RegistryError", "RegistryState", "SchemaVersion"]

Record = tuple[dict[str, Any], dict[str, Any] | None]

# Confluent's error codes (the HTTP status is the code's first three digits, or the code).
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
SCHEMA_VERSION_SOFT_DELETED = 40406
SCHEMA_VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED = 40408
INCOMPATIBLE_SCHEMA = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
STORE_ERROR = 50001


class RegistryError(Exception):
    """A request the registry refuses, with Confluent's ``error_code``."""

    def __init__(self, error_code: int, message: str) -> None:
        """Create the error; the HTTP status derives from the code."""
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def status(self) -> int:
        """The HTTP status: 40401 -> 404, 409 -> 409, 50001 -> 500."""
        code = self.error_code
        return code if code < 1000 else int(str(code)[:3])


@dataclass(slots=True)
class SchemaVersion:
    """One version of a subject."""

    subject: str
    version: int
    id: int
    schema: str
    deleted: bool = False

    def as_json(self) -> dict[str, Any]:
        """The REST representation."""
        return {
            "subject": self.subject,
            "version": self.version,
            "id": self.id,
            "schema": self.schema,
        }


def schema_key(subject: str, version: int) -> dict[str, Any]:
    """The ``_schemas`` key of a subject version."""
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}


def config_key(subject: str | None) -> dict[str, Any]:
    """The ``_schemas`` key of the global (``None``) or a subject's compatibility level."""
    return {"keytype": "CONFIG", "subject": subject, "magic": 0}


class RegistryState:
    """Subjects, versions, ids and compatibility levels; not thread-safe (the caller locks)."""

    def __init__(self) -> None:
        """Start empty."""
        self.subjects: dict[str, dict[int, SchemaVersion]] = {}
        self.by_id: dict[int, str] = {}
        self.ids_by_canonical: dict[str, int] = {}
        self.global_level = compat.DEFAULT_COMPATIBILITY
        self.subject_levels: dict[str, str] = {}
        self._parsed: dict[str, Any] = {}

    # -- replay ------------------------------------------------------------------------------

    def apply(self, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        """Apply one ``_schemas`` record (also used for live writes after they are persisted)."""
        kind = key.get("keytype")
        if kind == "SCHEMA":
            subject, version = key["subject"], int(key["version"])
            versions = self.subjects.setdefault(subject, {})
            if value is None:  # tombstone: permanently deleted
                versions.pop(version, None)
                if not versions:
                    del self.subjects[subject]
                return
            entry = SchemaVersion(
                subject, version, int(value["id"]), value["schema"], bool(value.get("deleted"))
            )
            versions[version] = entry
            self.by_id.setdefault(entry.id, entry.schema)
            self.ids_by_canonical.setdefault(self._canonical(entry.schema), entry.id)
        elif kind == "CONFIG":
            subject = key.get("subject")
            level = value.get("compatibilityLevel") if value else None
            if subject is None:
                self.global_level = level or compat.DEFAULT_COMPATIBILITY
            elif level is None:
                self.subject_levels.pop(subject, None)
            else:
                self.subject_levels[subject] = level

    def _canonical(self, text: str) -> str:
        return compat.canonical(self._parse(text))

    def _parse(self, text: str) -> Any:
        parsed = self._parsed.get(text)
        if parsed is None:
            parsed = self._parsed[text] = compat.parse(text)
        return parsed

    # -- queries -----------------------------------------------------------------------------

    def live_versions(self, subject: str, include_deleted: bool = False) -> list[SchemaVersion]:
        """The subject's versions in order (soft-deleted ones only if asked)."""
        versions = self.subjects.get(subject, {})
        return [v for _, v in sorted(versions.items()) if include_deleted or not v.deleted]

    def subject_names(self, include_deleted: bool = False) -> list[str]:
        """Subjects with at least one live version (or any version if asked)."""
        return sorted(s for s in self.subjects if self.live_versions(s, include_deleted))

    def require_subject(self, subject: str, include_deleted: bool = False) -> list[SchemaVersion]:
        """The subject's versions.

        Raises:
            RegistryError: 40401 if the subject has none.
        """
        versions = self.live_versions(subject, include_deleted)
        if not versions:
            raise RegistryError(SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")
        return versions

    def get_version(
        self, subject: str, version: str, include_deleted: bool = False
    ) -> SchemaVersion:
        """Resolve ``version`` (a number, ``latest`` or ``-1``) under ``subject``.

        Raises:
            RegistryError: 40401, 40402 or 42202 (not a valid version).
        """
        versions = self.require_subject(subject, include_deleted)
        if version in ("latest", "-1"):
            return versions[-1]
        try:
            number = int(version)
        except ValueError:
            number = 0
        if number <= 0:
            raise RegistryError(
                INVALID_VERSION,
                f"The specified version '{version}' is not a valid version id. Allowed values "
                "are between "
                f'[1, 2^31-1] and the string "latest"',
            )
        for entry in versions:
            if entry.version == number:
                return entry
        raise RegistryError(VERSION_NOT_FOUND, f"Version {number} not found.")

    def level_for(self, subject: str) -> str:
        """The subject's compatibility level, falling back to the global one."""
        return self.subject_levels.get(subject, self.global_level)

    def find(self, subject: str, text: str, include_deleted: bool = False) -> SchemaVersion | None:
        """The live (or, ``include_deleted``, also soft-deleted) version of ``subject``
        holding a schema equal to ``text``."""
        canonical = self._canonical(text)
        for entry in self.live_versions(subject, include_deleted):
            if self._canonical(entry.schema) == canonical:
                return entry
        return None

    def parse(self, text: str) -> Any:
        """Parse a schema.

        Raises:
            RegistryError: 42201 if invalid.
        """
        try:
            parsed = self._parse(text)
            compat.check_names(text, parsed)
            return parsed
        except compat.InvalidSchema as exc:
            raise RegistryError(INVALID_SCHEMA, str(exc)) from exc

    def incompatibilities(
        self, subject: str, text: str, against: list[SchemaVersion] | None = None
    ) -> list[str]:
        """Why ``text`` may not join ``subject`` at its level (empty if it may)."""
        new = self.parse(text)
        previous = against if against is not None else self.live_versions(subject)
        return compat.check(self.level_for(subject), new, [self._parse(v.schema) for v in previous])

    # -- changes (return records; the caller persists them, then applies them) ---------------

    def register(self, subject: str, text: str) -> tuple[int, list[Record]]:
        """Plan the registration of ``text`` under ``subject``; returns (id, records).

        Raises:
            RegistryError: 42201 invalid schema, 409 incompatible.
        """
        parsed = self.parse(text)
        existing = self.find(subject, text)
        if existing is not None:
            return existing.id, []
        problems = self.incompatibilities(subject, text)
        if problems:
            raise RegistryError(
                INCOMPATIBLE_SCHEMA,
                "Schema being registered is incompatible with an earlier schema for subject "
                f'"{subject}", '
                f"details: [{', '.join(problems)}]",
            )
        canonical = compat.canonical(parsed)
        schema_id = self.ids_by_canonical.get(canonical)
        if schema_id is None:
            schema_id = max(self.by_id, default=0) + 1
        all_versions = self.subjects.get(subject, {})
        version = max(all_versions, default=0) + 1
        value = {
            "subject": subject,
            "version": version,
            "id": schema_id,
            "schema": text,
            "deleted": False,
        }
        return schema_id, [(schema_key(subject, version), value)]

    def delete_subject(self, subject: str, permanent: bool) -> tuple[list[int], list[Record]]:
        """Plan a soft (or, after a soft one, permanent) delete of every version."""
        if permanent:
            versions = self.require_subject(subject, include_deleted=True)
            if any(not v.deleted for v in versions):
                raise RegistryError(
                    SUBJECT_NOT_SOFT_DELETED,
                    f"Subject '{subject}' was not deleted first before being permanently deleted",
                )
            return [v.version for v in versions], [
                (schema_key(subject, v.version), None) for v in versions
            ]
        if not self.live_versions(subject) and self.live_versions(subject, include_deleted=True):
            raise RegistryError(
                SUBJECT_SOFT_DELETED,
                f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently",
            )
        versions = self.require_subject(subject)
        records: list[Record] = [
            (schema_key(subject, v.version), {**v.as_json(), "deleted": True}) for v in versions
        ]
        return [v.version for v in versions], records

    def delete_version(
        self, subject: str, version: str, permanent: bool
    ) -> tuple[int, list[Record]]:
        """Plan a soft (or, after a soft one, permanent) delete of one version.

        Raises:
            RegistryError: 40406 soft-deleting a version soft-deleted already (as
                Confluent's), 40407 deleting permanently one not soft-deleted first.
        """
        if not permanent and version not in ("latest", "-1"):
            entry = self.get_version(subject, version, include_deleted=True)
            if entry.deleted:
                raise RegistryError(
                    SCHEMA_VERSION_SOFT_DELETED,
                    f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true "
                    "to delete permanently",
                )
        entry = self.get_version(subject, version, include_deleted=permanent)
        if permanent:
            if not entry.deleted:
                raise RegistryError(
                    SCHEMA_VERSION_NOT_SOFT_DELETED,
                    f"Subject '{subject}' Version {entry.version} was not deleted first before "
                    "being "
                    f"permanently deleted",
                )
            return entry.version, [(schema_key(subject, entry.version), None)]
        return entry.version, [
            (schema_key(subject, entry.version), {**entry.as_json(), "deleted": True})
        ]

    @staticmethod
    def set_level(subject: str | None, level: str) -> list[Record]:
        """Plan a compatibility change.

        Raises:
            RegistryError: 42203 for an unknown level.
        """
        normalized = level.upper() if isinstance(level, str) else ""
        if normalized not in compat.COMPATIBILITY_LEVELS:
            raise RegistryError(
                INVALID_COMPATIBILITY_LEVEL,
                "Invalid compatibility level. Valid values are "
                f"{', '.join(compat.COMPATIBILITY_LEVELS)}",
            )
        return [(config_key(subject), {"compatibilityLevel": normalized})]
