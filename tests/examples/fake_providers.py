"""Local HTTP servers that speak just enough OpenAI and Anthropic for the official SDKs.

Each server plays a scripted model: it reads the last turn of the request and answers
with a tool call or a text reply, and it records every request body so that tests can
inspect exactly what an agent sent. The script is driven by the conversation, not by
a fixed queue, so a wrong loop (a missing tool result, a lost message) shows up as a
wrong answer or a failed assertion rather than as a silently consumed canned reply.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A decision of the scripted model: ("tool", name, arguments) or ("text", reply).
Decision = tuple[str, ...] | tuple[str, str, dict[str, Any]]

REMEMBER = "Please remember: "
CALCULATE = "Please calculate: "
LIST_FILES = "Please list the files matching: "


def decide(last_user_text: str | None, last_tool_output: str | None) -> Decision:
    """Return what the scripted model does next, given the newest turn of the request.

    - A tool output came back: say what it was (so the reply proves the result arrived).
    - The user asks to remember a fact: call `set_context` to append it to "memory".
    - The user asks for a calculation or a file listing: call the example's own tool
      (`calculate` in the OpenAI example, `list_files` in the Anthropic one).
    - Anything else: answer in text, echoing the question.
    """
    if last_tool_output is not None:
        return ("text", f"Done. The tool said: {last_tool_output}")
    text = last_user_text or ""
    if text.startswith(REMEMBER):
        fact = text.removeprefix(REMEMBER)
        arguments = {"label": "memory", "content": fact, "action": "append"}
        return ("tool", "set_context", arguments)
    if text.startswith(CALCULATE):
        return ("tool", "calculate", {"expression": text.removeprefix(CALCULATE)})
    if text.startswith(LIST_FILES):
        return ("tool", "list_files", {"pattern": text.removeprefix(LIST_FILES)})
    return ("text", f"You said: {text}")


@dataclass
class FakeProvider:
    """A running fake provider: its base URL and the request bodies it received.

    Setting `fail_at` to n makes the n-th request (counting from 1 over the server's
    life) get an HTTP 500, as a provider outage in the middle of a turn would.
    """

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_at: int | None = None


def _openai_last_turn(body: dict[str, Any]) -> tuple[str | None, str | None]:
    last = body["messages"][-1]
    content = last.get("content")
    if isinstance(content, list):
        content = "".join(block.get("text", "") for block in content)
    if last["role"] == "tool":
        return None, str(content)
    return str(content), None


def _openai_reply(body: dict[str, Any], number: int) -> dict[str, Any]:
    decision = decide(*_openai_last_turn(body))
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if decision[0] == "tool":
        _, name, arguments = decision
        message["tool_calls"] = [
            {
                "id": f"call_{number}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
        finish = "tool_calls"
    else:
        message["content"] = decision[1]
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000 + number,
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _anthropic_last_turn(body: dict[str, Any]) -> tuple[str | None, str | None]:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content, None
    results = [block for block in content if block.get("type") == "tool_result"]
    if results:
        output = results[-1].get("content")
        if isinstance(output, list):
            output = "".join(block.get("text", "") for block in output)
        return None, str(output)
    return "".join(block.get("text", "") for block in content if block["type"] == "text"), None


def _anthropic_reply(body: dict[str, Any], number: int) -> dict[str, Any]:
    decision = decide(*_anthropic_last_turn(body))
    if decision[0] == "tool":
        _, name, arguments = decision
        content = [{"type": "tool_use", "id": f"toolu_{number}", "name": name, "input": arguments}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": decision[1]}]
        stop = "end_turn"
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


ROUTES: dict[str, Callable[[dict[str, Any], int], dict[str, Any]]] = {
    "/v1/chat/completions": _openai_reply,
    "/v1/messages": _anthropic_reply,
}


def _handler(provider: FakeProvider) -> type[BaseHTTPRequestHandler]:
    numbers = itertools.count(1)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            route = ROUTES.get(self.path.split("?")[0])
            if route is None:
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            provider.requests.append(body)
            if provider.fail_at == len(provider.requests):
                self._send(500, {"error": {"type": "api_error", "message": "scripted outage"}})
                return
            self._send(200, route(body, next(numbers)))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


@contextmanager
def fake_provider() -> Iterator[FakeProvider]:
    """Run a fake provider on a free local port for the duration of the block."""
    provider = FakeProvider(base_url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(provider))
    provider.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# ---------------------------------------------------------------- what the tests say

FACT = "my favourite colour is teal"
FILLER = (
    "Some background so that the conversation grows: the harbour town has a lighthouse, "
    "a market on Saturdays, three bakeries, a ferry to the islands twice a day and a "
    "museum of old maps that nobody visits in winter. "
)


def script(own_tool_request: str) -> list[str]:
    """Return the user's lines: save a fact, use the example's own tool, then chat on."""
    return [REMEMBER + FACT, own_tool_request, *[f"Question {i}. {FILLER * 2}" for i in range(12)]]


# Messages each scripted turn stores: user, assistant tool call, tool result, answer for
# the two tool turns; user and answer for the others.
STORED_MESSAGES = 4 + 4 + 2 * 12
BUDGET = 800


@dataclass
class Run:
    """One scripted conversation through an example, and what the server saw of it."""

    manager: Any
    session: Any
    answers: list[str]
    requests: list[dict[str, Any]]


def load_example(name: str) -> Any:
    """Import examples/<name>.py as a module (examples/ is not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
