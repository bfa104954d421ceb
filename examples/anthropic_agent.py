"""An async agent loop on the Anthropic SDK, with its memory and history in sessionary.

Run it against the Anthropic API (or a local server speaking its Messages API):

    ANTHROPIC_API_KEY=... python examples/anthropic_agent.py --model claude-sonnet-4-5 \
        --store sqlite:///agent.db

What it shows (the OpenAI example does the same with the synchronous API):

- an `AsyncSession` whose system prompt comes from a readonly "persona" block and a
  writable, user-level "memory" block that the model edits with `set_context`;
- the frozen system prompt, sent byte for byte the same on every call of a session, so
  the provider's prompt cache keeps hitting;
- the memory tools next to a tool of the example's own (`list_files`), every call
  answered through `session.call_tool` or our own runner, neither of which raises;
- `session.turn()`: each user turn (the model's replies, tool calls and results
  included) is built in a working context and stored in one atomic write at its end;
  `ctx.request("anthropic")` writes the request with `sessionary.formats.to_anthropic`
  and `from_anthropic` reads the reply back;
- compaction under a small token budget: the model is sent a summary of older turns,
  while the store keeps every message.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from anthropic import AsyncAnthropic

from sessionary import (
    AsyncSession,
    AsyncSessionManager,
    CompactionPolicy,
    Message,
    SessionConfig,
    ToolCallPart,
    ToolResult,
    ToolSpec,
)
from sessionary.formats import from_anthropic

PERSONA = (
    "You are a helpful assistant for the files in one folder. Save durable facts about "
    "the user to your memory block with set_context. Use list_files to see the folder."
)

LIST_FILES = ToolSpec(
    "list_files",
    "List the files in the working folder whose names match a glob pattern.",
    {
        "type": "object",
        "properties": {"pattern": {"type": "string", "description": "e.g. *.py (default: *)"}},
    },
)


def list_files(root: Path, pattern: str) -> str:
    """Return the names (relative to `root`) of the files matching `pattern`, one a line."""
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ValueError("the pattern must stay inside the working folder")
    names = sorted(str(p.relative_to(root)) for p in root.glob(pattern) if p.is_file())
    return "\n".join(names) or "(no files match)"


def open_manager(store: str, user: str, budget: int) -> AsyncSessionManager:
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
    return AsyncSessionManager(store, user=user, config=config, compaction=compaction)


async def run_tool(session: AsyncSession, root: Path, call: ToolCallPart) -> ToolResult:
    """Run one tool call: ours here, the memory tools through the session."""
    if call.name == "list_files":
        try:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            return ToolResult(list_files(root, str(arguments.get("pattern") or "*")))
        except (ValueError, OSError) as exc:
            return ToolResult(f"error: {exc}", is_error=True)
    return await session.call_tool(call.name, call.arguments)


async def ask(
    client: AsyncAnthropic,
    session: AsyncSession,
    model: str,
    text: str,
    *,
    root: Path = Path("."),
    max_steps: int = 8,
) -> str:
    """Run one user turn to its final answer: call the model, run its tools, repeat.

    The turn is one atomic write: if the provider fails halfway, nothing is stored and
    the user can simply ask again.
    """
    async with session.turn(tools=[LIST_FILES]) as ctx:
        ctx.add(Message.user(text))
        for _ in range(max_steps):
            # System prompt (frozen), compacted history plus this turn, and every tool.
            request = ctx.request("anthropic")
            response = await client.messages.create(model=model, max_tokens=1024, **request)
            assistant_turn = {"role": "assistant", "content": response.content}
            reply = ctx.add(from_anthropic([assistant_turn])[0])
            if not reply.tool_calls:
                return reply.text
            results = [
                (await run_tool(session, root, call)).to_part(call.id, call.name)
                for call in reply.tool_calls
            ]
            ctx.add(Message(role="tool", parts=list(results)))
    return "(stopped: too many tool calls in one turn)"


async def chat(args: argparse.Namespace) -> None:
    """Chat on stdin: one line per user turn; an empty line or EOF ends the session."""
    client = AsyncAnthropic(base_url=args.base_url, api_key=args.api_key)
    async with open_manager(args.store, args.user, args.budget) as manager:
        if args.session:
            session = await manager.get_or_create(args.session)
        else:
            session = await manager.create()
        print(f"session {session.id} (Ctrl-D to quit)")
        while line := await asyncio.to_thread(read_line):
            print(await ask(client, session, args.model, line, root=Path(args.root)))


def read_line() -> str:
    """Return the user's next line, or "" at the end of input."""
    try:
        return input("> ").strip()
    except EOFError:
        return ""


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and chat."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("ANTHROPIC_BASE_URL"))
    parser.add_argument("--api-key", default=os.environ.get("ANTHROPIC_API_KEY"))
    parser.add_argument("--model", default="claude-sonnet-4-5")
    parser.add_argument("--store", default="sqlite:///agent.db")
    parser.add_argument("--user", default="me")
    parser.add_argument("--session", help="resume this session id instead of starting one")
    parser.add_argument("--root", default=".", help="the folder list_files looks in")
    parser.add_argument("--budget", type=int, default=4000, help="history token budget")
    asyncio.run(chat(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
