"""The README's agent loop, run as written (a scripted model, no network)."""

from __future__ import annotations

import runpy
from pathlib import Path

EXAMPLE = '''
import json

from sessionary import Message, SessionConfig, SessionManager, ToolCallPart

config = (
    SessionConfig()
    .with_block("soul", "You are a concise travel assistant.")
    .with_block("memory", description="What you know about the user", level="user", limit=500)
    .with_cached_prompt()
)


class ScriptedModel:
    """Stands in for an LLM: it saves what it learns, then answers."""

    def __init__(self):
        self.turn = 0

    def complete(self, system, messages, tools):
        self.turn += 1
        if self.turn == 1:
            args = {"label": "memory", "content": "Prefers trains to planes.", "action": "append"}
            call = ToolCallPart(id="call-1", name="set_context", arguments=json.dumps(args))
            return Message.assistant(tool_calls=[call])
        return Message.assistant("Noted: I will look for train routes.")


with SessionManager("memory://", user="ada", config=config) as manager:
    chat = manager.create(name="trip")
    model = ScriptedModel()
    chat.append(Message.user("I hate flying; trains please."))
    while True:
        reply = model.complete(
            chat.freeze_system_prompt(),  # identical on every call: provider caches stay warm
            chat.context_history(),
            chat.export_tools("openai-chat"),
        )
        chat.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:  # errors come back as results, never exceptions
            result = chat.call_tool(call.name, call.arguments)
            chat.append(Message(role="tool", parts=[result.to_part(call.id, call.name)]))

    print(chat.history()[-1].text)
    # The memory block is per user: the next session starts with it in its prompt.
    print(manager.create().freeze_system_prompt().splitlines()[-1])
'''


def test_the_readme_agent_loop_runs(tmp_path: Path, capsys: object) -> None:
    script = tmp_path / "agent.py"
    script.write_text(EXAMPLE)
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out == "Noted: I will look for train routes.\nPrefers trains to planes.\n"
