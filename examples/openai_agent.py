"""An agent loop on the OpenAI SDK, with its memory and history in a sessionary session.

Run it against any Chat Completions endpoint (OpenAI, or a local server speaking its API):

    OPENAI_API_KEY=... python examples/openai_agent.py --model gpt-4.1-mini \
        --store sqlite:///agent.db

What it shows:

- a session whose system prompt is rendered from two context blocks: a readonly
  "persona" block and a writable "memory" block kept at user level, so facts the model
  saves there reach every later session of the same user;
- the frozen system prompt: the same bytes on every call of a session (good for prompt
  caching), even after the model writes to its memory;
- the memory tools (`set_context`) next to a tool of the example's own (`calculate`),
  the model's calls answered through `session.call_tool`, which never raises;
- `session.turn()`: each user turn (the model's replies, tool calls and results
  included) is built in a working context and stored in one atomic write at its end;
  `ctx.request("openai-chat")` writes the request with `sessionary.formats`, and
  `from_openai_chat` reads the reply back;
- compaction: a small token budget, so older turns are summarized in what the model is
  sent while every message stays stored.

`examples/anthropic_agent.py` does the same with the async API and the Anthropic SDK.
"""

from __future__ import annotations

import argparse
import ast
import operator
import os
from collections.abc import Callable, Iterator
from typing import Any

from openai import OpenAI

from sessionary import (
    CompactionPolicy,
    Message,
    Session,
    SessionConfig,
    SessionManager,
    ToolCallPart,
    ToolResult,
    ToolSpec,
)
from sessionary.formats import from_openai_chat

PERSONA = (
    "You are a concise assistant. When the user tells you something worth keeping about "
    "themselves, save it to your memory block with set_context. Use the calculate tool "
    "for arithmetic instead of doing it in your head."
)

CALCULATE = ToolSpec(
    "calculate",
    "Evaluate an arithmetic expression (+, -, *, /, //, %, **, parentheses).",
    {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "e.g. (2 + 3) * 4"}},
        "required": ["expression"],
    },
)

_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: lambda base, exp: base**exp if abs(exp) <= 64 else _too_big(exp),
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _too_big(exponent: Any) -> Any:
    raise ValueError(f"exponent {exponent} is too large")


def calculate(expression: str) -> str:
    """Evaluate arithmetic safely: numbers and operators only, no names, no calls."""

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.operand))
        raise ValueError(f"not arithmetic: {ast.unparse(node)}")

    return str(walk(ast.parse(expression, mode="eval").body))


def open_manager(store: str, user: str, budget: int) -> SessionManager:
    """Return a manager whose sessions have the persona, the memory and compaction."""
    config = (
        SessionConfig()
        .with_block("persona", PERSONA)
        .with_block(
            "memory",
            description="Durable facts about the user; append one line per fact.",
            limit=1000,
            level="user",
        )
        .with_cached_prompt()
    )
    # Compact between turns once the request (system prompt, memory tools and history)
    # passes 3/4 of `budget` tokens (the rest is room for the turn in progress), keeping
    # the first message and, word for word, recent messages worth half of what the
    # trigger leaves for history; older ones become a summary.
    compaction = CompactionPolicy(trigger_tokens=budget * 3 // 4, protect_head=1)
    return SessionManager(store, user=user, config=config, compaction=compaction)


def run_tool(session: Session, call: ToolCallPart) -> ToolResult:
    """Run one tool call: ours here, the memory tools through the session."""
    if call.name == "calculate":
        try:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            return ToolResult(calculate(str(arguments.get("expression", ""))))
        except (ValueError, SyntaxError, ArithmeticError) as exc:
            return ToolResult(f"error: {exc}", is_error=True)
    return session.call_tool(call.name, call.arguments)


def ask(client: OpenAI, session: Session, model: str, text: str, max_steps: int = 8) -> str:
    """Run one user turn to its final answer: call the model, run its tools, repeat.

    The turn is one atomic write: if the provider fails halfway, nothing is stored and
    the user can simply ask again.
    """
    with session.turn(tools=[CALCULATE]) as ctx:
        ctx.add(Message.user(text))
        for _ in range(max_steps):
            # System prompt (frozen), compacted history plus this turn, and every tool.
            request = ctx.request("openai-chat")
            response = client.chat.completions.create(model=model, **request)
            reply = ctx.add(from_openai_chat([response.choices[0].message])[0])
            if not reply.tool_calls:
                return reply.text
            results = [
                run_tool(session, call).to_part(call.id, call.name) for call in reply.tool_calls
            ]
            ctx.add(Message(role="tool", parts=list(results)))
    return "(stopped: too many tool calls in one turn)"


def user_lines() -> Iterator[str]:
    """Yield the user's lines from stdin until an empty line or end of input."""
    while True:
        try:
            line = input("> ").strip()
        except EOFError:
            return
        if not line:
            return
        yield line


def main(argv: list[str] | None = None) -> None:
    """Chat on stdin: one line per user turn; an empty line or EOF ends the session."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"))
    parser.add_argument("--model", default="gpt-4.1-mini")
    parser.add_argument("--store", default="sqlite:///agent.db")
    parser.add_argument("--user", default="me")
    parser.add_argument("--session", help="resume this session id instead of starting one")
    parser.add_argument("--budget", type=int, default=4000, help="history token budget")
    args = parser.parse_args(argv)
    client = OpenAI(base_url=args.base_url, api_key=args.api_key)
    with open_manager(args.store, args.user, args.budget) as manager:
        session = manager.get_or_create(args.session) if args.session else manager.create()
        print(f"session {session.id} (Ctrl-D to quit)")
        for line in user_lines():
            print(ask(client, session, args.model, line))


if __name__ == "__main__":
    main()
