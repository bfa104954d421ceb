"""A local HTTP server speaking just enough of the OpenAI and Anthropic APIs for tests.

The real SDK clients talk to it over HTTP: `reply` sets what the next requests get
(a summary text, an error status and body, or a stall that outlasts the client's timeout),
and `requests` records every JSON body received.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your "
        "messages resulted in 9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC_OVERFLOW = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 212000 tokens > 200000 maximum",
    },
}


@dataclass
class Behaviour:
    """What the server answers: `status` with `body`, or a `stall` until released."""

    text: str = "## Intent\n- summary"
    status: int = 200
    body: dict[str, Any] | None = None
    stall: bool = False


@dataclass
class FakeLLM:
    """The running server's address, its behaviour queue and what it received."""

    base_url: str
    default: Behaviour = field(default_factory=Behaviour)
    queue: list[Behaviour] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def reply(self, *behaviours: Behaviour) -> None:
        """Answer the next requests with `behaviours`, in order, then with `default`."""
        self.queue.extend(behaviours)

    def next(self) -> Behaviour:
        return self.queue.pop(0) if self.queue else self.default


def _openai_body(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _anthropic_body(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "test-model",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            payload = json.loads(self.rfile.read(length) or b"{}")
            fake.requests.append({"path": self.path, **payload})
            behaviour = fake.next()
            if behaviour.stall:
                fake.release.wait(30)
                return
            if behaviour.body is not None:
                body = behaviour.body
            elif self.path.endswith("/messages"):
                body = _anthropic_body(behaviour.text)
            else:
                body = _openai_body(behaviour.text)
            data = json.dumps(body).encode()
            self.send_response(behaviour.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serve(keep_alive: bool = False) -> Iterator[FakeLLM]:
    """Run the server on a free local port for the duration of the block.

    `keep_alive`: answer in HTTP/1.1, so that clients keep their connections open.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(FakeLLM("")))
    fake = FakeLLM(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(fake)
    if keep_alive:
        server.RequestHandlerClass.protocol_version = "HTTP/1.1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
