"""Agent state: an agent's whole runtime state as plain, JSON-shaped data.

`AgentState` holds where the agent's history ends, the compacted summary, the plan, the
task list, tool permissions, the active tool groups and any other named section.
`sessionary.keeper` stores it per session; this module does no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from sessionary.errors import InvalidInput
from sessionary.records import check_json, load_json

__all__ = ["NAMESPACE", "AgentState"]

NAMESPACE = "agent"
"""The document namespace agent state is stored under (key: the agent's name)."""

_FORMAT = 1
_KINDS: dict[str, type | tuple[type, ...]] = {
    "history_leaf": (str, type(None)),
    "summary": (str, type(None)),
    "plan": dict,
    "tasks": list,
    "permissions": dict,
    "tool_groups": list,
    "sections": dict,
}


@dataclass(slots=True)
class AgentState:
    """Everything an agent needs to resume; every field is JSON.

    `version` is the stored version this state was loaded from or saved as (0: never
    saved); it is what the next save must still find, and is not part of `to_json`.
    """

    history_leaf: str | None = None
    summary: str | None = None
    plan: dict[str, Any] = field(default_factory=dict)
    tasks: list[Any] = field(default_factory=list)
    permissions: dict[str, Any] = field(default_factory=dict)
    tool_groups: list[str] = field(default_factory=list)
    sections: dict[str, Any] = field(default_factory=dict)
    version: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return the state as a JSON object (without `version`)."""
        data: dict[str, Any] = {"format": _FORMAT}
        for name in _KINDS:
            data[name] = getattr(self, name)
        return data

    def to_json(self) -> str:
        """Return the state as a JSON string.

        Raises:
            InvalidInput: If a field has the wrong type (what `from_dict` would refuse:
                saving it would leave a state no process can load), or a section holds a
                value JSON cannot represent, a key that is not a string, or nests deeper
                than `MAX_JSON_DEPTH`.
        """
        data = self.to_dict()
        _check_fields(data)
        check_json(data, "agent state")
        try:
            return json.dumps(data, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"agent state is not JSON: {exc}") from None

    @classmethod
    def from_dict(cls, data: object, version: int = 0) -> AgentState:
        """Return the state a `to_dict` object holds; unknown keys are refused.

        Raises:
            InvalidInput: If `data` is not an agent state object.
        """
        if not isinstance(data, dict):
            raise InvalidInput(f"agent state must be an object, not {type(data).__name__}")
        unknown = set(data) - set(_KINDS) - {"format"}
        if unknown:
            raise InvalidInput(f"agent state has unknown fields: {sorted(unknown)}")
        if data.get("format", _FORMAT) != _FORMAT:
            raise InvalidInput(f"agent state format {data.get('format')!r} is not supported")
        values = {name: data[name] for name in _KINDS if name in data}
        _check_fields(values)
        return cls(**values, version=version)

    @classmethod
    def from_json(cls, text: str | bytes) -> AgentState:
        """Return the state a `to_json` string holds.

        Raises:
            InvalidInput: If `text` is not JSON or not an agent state object.
        """
        try:
            data = load_json(text)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"agent state is not JSON: {exc}") from None
        return cls.from_dict(data)

    def same_content(self, other: AgentState) -> bool:
        """Return whether two states hold the same data, whatever their versions."""
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self)[:-1])


def _check_fields(values: dict[str, Any]) -> None:
    """Refuse a field of the wrong type (`values` maps field names to their values).

    Raises:
        InvalidInput: If a field has the wrong type, or `tool_groups` holds a non-string.
    """
    for name, kind in _KINDS.items():
        if name in values and not isinstance(values[name], kind):
            raise InvalidInput(f"agent state field {name!r} has the wrong type")
    if not all(isinstance(group, str) for group in values.get("tool_groups", [])):
        raise InvalidInput("agent state field 'tool_groups' must hold strings")
