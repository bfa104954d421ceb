"""Tool definitions as data: JSON schemas, argument checking and provider formats (pure).

A `ToolSpec` is a name, a description and a JSON schema for the arguments. It exports to
the wire shapes of every provider format (OpenAI Chat Completions, OpenAI Responses,
Anthropic Messages, Gemini function declarations, AI SDK tools, Workers AI), and `check_arguments`
validates what a model sent against the schema (the
subset of JSON Schema the tools use: objects, strings, integers, booleans, enums,
lengths, bounds, required and no additional properties).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from sessionary.errors import InvalidInput
from sessionary.model import Message, Part, ToolCallPart, ToolResultPart
from sessionary.records import load_json

__all__ = [
    "TOOL_FORMATS",
    "ToolFormat",
    "check_format",
    "ToolResult",
    "ToolSpec",
    "check_arguments",
    "export_tools",
    "parse_arguments",
    "reclaim_unloaded",
]

ToolFormat = Literal[
    "openai-chat", "openai-responses", "anthropic", "gemini", "ai-sdk", "workers-ai"
]
TOOL_FORMATS: tuple[str, ...] = get_args(ToolFormat)
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

    def to_gemini(self) -> dict[str, Any]:
        """Return the tool as a Gemini function declaration.

        The schema goes in `parameters_json_schema` (plain JSON Schema), not in
        `parameters` (Gemini's OpenAPI subset, which refuses keys such as
        `additionalProperties`). A request sends the declarations of all its tools in one
        Gemini tool: ``{"function_declarations": [...]}``.
        """
        return {
            "name": self.name,
            "description": self.description,
            "parameters_json_schema": self.parameters,
        }

    def to_ai_sdk(self) -> dict[str, Any]:
        """Return the tool as an AI SDK tool: ``{name, description, inputSchema}``.

        The AI SDK keys its `tools` by name; `inputSchema` is the JSON schema a JavaScript
        caller wraps with `jsonSchema(...)`.
        """
        return {"name": self.name, "description": self.description, "inputSchema": self.parameters}

    def to_workers_ai(self) -> dict[str, Any]:
        """Return the tool as a Workers AI chat model's `tools` item.

        ``{name, description, parameters}``: the form `env.AI.run` documents for function
        calling.
        """
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def export(self, format: ToolFormat) -> dict[str, Any]:
        """Return the tool in `format`, one of `TOOL_FORMATS`.

        Raises:
            InvalidInput: If the format is unknown.
        """
        exporter = getattr(self, f"to_{check_format(format).replace('-', '_')}")
        exported: dict[str, Any] = exporter()
        return exported


def check_format(format: object) -> ToolFormat:
    """Return `format` if it is one of `TOOL_FORMATS`.

    Raises:
        InvalidInput: If it is not (checked even when there are no tools to export).
    """
    if not isinstance(format, str) or format not in TOOL_FORMATS:
        raise InvalidInput(f"a format is one of {list(TOOL_FORMATS)}, not {format!r}")
    return format  # type: ignore[return-value]


def export_tools(specs: Iterable[ToolSpec], format: ToolFormat) -> list[dict[str, Any]]:
    """Return every tool in `format` (see `ToolSpec.export`).

    Raises:
        InvalidInput: If the format is unknown, whether or not there are tools.
    """
    check_format(format)
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
            arguments = load_json(arguments) if arguments.strip() else {}
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


def _load_target(call: ToolCallPart) -> tuple[str, str] | None:
    args = call.arguments
    if call.name != "load_context" or not isinstance(args, Mapping):
        return None
    label, key = args.get("label"), args.get("key")
    return (label, key) if isinstance(label, str) and isinstance(key, str) else None


def reclaim_unloaded(
    messages: Sequence[Message], loaded: Mapping[str, Sequence[str]]
) -> list[Message]:
    """Return `messages` with the output of `load_context` calls no longer needed replaced.

    A load's output is replaced by a one-line note when its entry is not loaded any more
    (`unload_context`), or when the same entry was loaded again later (the later copy is
    kept). The stored messages are not touched: this is a read-time view for building a
    model's context, so the original record stays readable and searchable.
    """
    targets: dict[str, tuple[str, str]] = {}
    for message in messages:
        for call in message.tool_calls:
            target = _load_target(call)
            if target is not None:
                targets[call.id] = target
    last: dict[tuple[str, str], str] = {}
    for message in messages:
        for result in message.tool_results:
            if result.call_id in targets and not result.is_error:
                last[targets[result.call_id]] = result.call_id
    return [_reclaimed(m, targets, last, loaded) for m in messages]


def _reclaimed(
    message: Message,
    targets: Mapping[str, tuple[str, str]],
    last: Mapping[tuple[str, str], str],
    loaded: Mapping[str, Sequence[str]],
) -> Message:
    parts: list[Part] = []
    for part in message.parts:
        target = targets.get(part.call_id) if isinstance(part, ToolResultPart) else None
        if isinstance(part, ToolResultPart) and target is not None and not part.is_error:
            label, key = target
            if key not in loaded.get(label, ()):
                note = f"[unloaded: {label}/{key}; call load_context to load it again]"
                part = dataclasses.replace(part, output=note)
            elif last.get(target) != part.call_id:
                part = dataclasses.replace(part, output=f"[{label}/{key} was loaded again below]")
        parts.append(part)
    return dataclasses.replace(message, parts=parts)
