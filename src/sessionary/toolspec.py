"""Tool definitions as data: JSON schemas, argument checking and provider formats (pure).

A `ToolSpec` is a name, a description and a JSON schema for the arguments. It exports to
the three wire shapes models take (OpenAI Chat Completions, OpenAI Responses, Anthropic
Messages), and `check_arguments` validates what a model sent against the schema (the
subset of JSON Schema the tools use: objects, strings, integers, booleans, enums,
lengths, bounds, required and no additional properties).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sessionary.errors import InvalidInput
from sessionary.model import ToolResultPart

__all__ = [
    "TOOL_FORMATS",
    "ToolFormat",
    "ToolResult",
    "ToolSpec",
    "check_arguments",
    "export_tools",
    "parse_arguments",
]

ToolFormat = Literal["openai-chat", "openai-responses", "anthropic"]
TOOL_FORMATS: tuple[str, ...] = ("openai-chat", "openai-responses", "anthropic")
_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "boolean": bool,
    "object": dict,
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: its name, what it does (for the model) and its argument schema."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai_chat(self) -> dict[str, Any]:
        """Return the tool as an OpenAI Chat Completions `tools` item."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def to_openai_responses(self) -> dict[str, Any]:
        """Return the tool as an OpenAI Responses `tools` item."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "strict": False,
        }

    def to_anthropic(self) -> dict[str, Any]:
        """Return the tool as an Anthropic Messages `tools` item."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def export(self, format: ToolFormat) -> dict[str, Any]:
        """Return the tool in `format`: "openai-chat", "openai-responses" or "anthropic".

        Raises:
            InvalidInput: If the format is unknown.
        """
        if format == "openai-chat":
            return self.to_openai_chat()
        if format == "openai-responses":
            return self.to_openai_responses()
        if format == "anthropic":
            return self.to_anthropic()
        raise InvalidInput(f"a tool format is one of {TOOL_FORMATS}, not {format!r}")


def export_tools(specs: Iterable[ToolSpec], format: ToolFormat) -> list[dict[str, Any]]:
    """Return every tool in `format` (see `ToolSpec.export`)."""
    return [spec.export(format) for spec in specs]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call returns to the model: text, and whether the call failed."""

    text: str
    is_error: bool = False

    def __str__(self) -> str:
        return self.text

    def to_part(self, call_id: str, name: str | None = None) -> ToolResultPart:
        """Return the result as a message part answering the call `call_id`."""
        return ToolResultPart(call_id=call_id, output=self.text, is_error=self.is_error, name=name)


def parse_arguments(arguments: object) -> dict[str, Any]:
    """Return a tool call's arguments as a dict: a mapping, or a JSON object string.

    Raises:
        InvalidInput: If they are neither.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise InvalidInput(f"the arguments are not valid JSON ({exc.args[0]})") from None
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise InvalidInput("the arguments must be a JSON object")
    return dict(arguments)


def check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Check a tool call's arguments against its object schema.

    Raises:
        InvalidInput: With every problem found, in a sentence the model can act on.
    """
    problems = _object_problems(schema, arguments)
    if problems:
        raise InvalidInput("; ".join(problems))


def _object_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems = [
        f"missing required argument {name!r}"
        for name in schema.get("required", [])
        if name not in arguments
    ]
    for name, value in arguments.items():
        if name in properties:
            problems.extend(_value_problems(name, properties[name], value))
        elif schema.get("additionalProperties") is False:
            allowed = ", ".join(properties) or "none"
            problems.append(f"unknown argument {name!r} (allowed: {allowed})")
    return problems


def _value_problems(name: str, schema: Mapping[str, Any], value: Any) -> list[str]:
    expected = schema.get("type")
    kind = _TYPES.get(expected) if isinstance(expected, str) else None
    wrong_bool = expected == "integer" and isinstance(value, bool)
    if kind is not None and (not isinstance(value, kind) or wrong_bool):
        return [f"argument {name!r} must be a {expected}, not {_json_type(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        options = ", ".join(json.dumps(option) for option in schema["enum"])
        return [f"argument {name!r} must be one of {options}; got {json.dumps(value)}"]
    return _bound_problems(name, schema, value)


def _bound_problems(name: str, schema: Mapping[str, Any], value: Any) -> list[str]:
    problems = []
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(f"argument {name!r} must not be empty")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"argument {name!r} is over {schema['maxLength']} characters")
    if isinstance(value, int):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"argument {name!r} must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"argument {name!r} must be at most {schema['maximum']}")
    if isinstance(value, dict) and schema.get("type") == "object":
        problems.extend(_object_problems(schema, value))
    return problems


def _json_type(value: Any) -> str:
    names = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array"}
    return "null" if value is None else names.get(type(value), "object")
