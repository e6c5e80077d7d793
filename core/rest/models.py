"""Kafka Connect's REST entities (``org.apache.kafka.connect.runtime.rest.entities``).

These describe the responses in ``/openapi.json``; handlers build plain dicts of the same
shape (the herder speaks dicts), and the OpenAPI fuzz test checks the two agree.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError


class _Entity(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class _RequestEntity(_Entity):
    """A request body Kafka maps onto an entity class: as Jackson there, a field the entity
    does not have is refused, naming it (Kafka Connect answers that with a 500; the REST
    layer answers 400 like any malformed body, see docs/rest.md). ``extra="forbid"`` says so
    in /openapi.json (``additionalProperties: false``); the check below words the error."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = [field.alias or name for name, field in cls.model_fields.items()]
            unknown = [key for key in data if key not in known]
            if unknown:
                raise PydanticCustomError(
                    "unrecognized_field",
                    "Unrecognized field{s} {unknown} (known fields: {known})",
                    {
                        "s": "s" if len(unknown) > 1 else "",
                        "unknown": ", ".join(f'"{key}"' for key in unknown),
                        "known": ", ".join(f'"{key}"' for key in known),
                    },
                )
        return data


class ErrorMessage(_Entity):
    """Every error response: ``{"error_code": <HTTP status>, "message": ...}``."""

    error_code: int
    message: str


class ServerInfo(_Entity):
    version: str
    commit: str
    kafka_cluster_id: str | None


class WorkerStatus(_Entity):
    status: str = Field(description="healthy, starting or unhealthy")
    message: str


class ConnectorTaskId(_Entity):
    connector: str
    task: int


class ConnectorInfo(_Entity):
    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskId]
    type: str = Field(description="source, sink or unknown")


class ConnectorState(_Entity):
    state: str = Field(description="UNASSIGNED, RUNNING, PAUSED, FAILED, RESTARTING or STOPPED")
    worker_id: str
    trace: str | None = Field(default=None, description="Omitted unless FAILED")
    version: str | None = Field(default=None, description="Plugin version (KIP-891)")


class TaskState(ConnectorState):
    id: int


class ConnectorStateInfo(_Entity):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: str


class ExpandedConnector(_Entity):
    status: ConnectorStateInfo | None = None
    info: ConnectorInfo | None = None


class TaskInfo(_Entity):
    id: ConnectorTaskId
    config: dict[str, str]


class CreateConnectorRequest(_RequestEntity):
    name: str | None = None
    config: dict[str, Any] | None = None
    initial_state: str | None = Field(default=None, description="RUNNING, PAUSED or STOPPED")


class ConnectorOffset(_RequestEntity):
    partition: dict[str, Any] | None = None
    offset: dict[str, Any] | None = None


class ConnectorOffsets(_RequestEntity):
    offsets: list[ConnectorOffset] | None = None


class Message(_Entity):
    message: str


class ActiveTopics(_Entity):
    topics: list[str]


class PluginInfo(_Entity):
    class_: str = Field(alias="class")
    type: str
    version: str | None = None


class ConfigKeyInfo(_Entity):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str | None
    documentation: str | None
    group: str | None
    order: int
    width: str | None
    display_name: str | None
    dependents: list[str]


class ConfigValueInfo(_Entity):
    name: str
    value: str | None
    recommended_values: list[str | None]
    errors: list[str]
    visible: bool


class ConfigInfo(_Entity):
    definition: ConfigKeyInfo
    value: ConfigValueInfo


class ConfigInfos(_Entity):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


class LoggerLevel(_Entity):
    level: str | None
    last_modified: int | None


class LevelRequest(_Entity):
    level: str | None = None
