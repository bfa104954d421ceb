"""One agent turn: blocks, a frozen prompt, a memory tool, and an SDK response stored.

The model is played by recorded OpenAI Chat Completions responses (real `openai` SDK
objects, so it runs offline: `pip install 'sessionary[openai]'`); with a client, call
`client.chat.completions.create(model=..., **request)` instead.
"""

import json
from typing import Any

from openai.types.chat import ChatCompletion

from sessionary import Message, SessionConfig, SessionManager
from sessionary.formats import from_openai_chat

config = (
    SessionConfig()
    .with_block("soul", "You are a concise travel assistant.")
    .with_block("memory", description="What you know about the user", level="user", limit=500)
    .with_cached_prompt()
)


def call_model(request: dict[str, Any]) -> ChatCompletion:
    """Stands in for the OpenAI client: it saves what it learns, then answers."""
    if request["messages"][-1]["role"] == "user":
        args = {"label": "memory", "content": "Prefers trains to planes.", "action": "replace"}
        function = {"name": "set_context", "arguments": json.dumps(args)}
        call = {"id": "call-1", "type": "function", "function": function}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    else:
        message = {"role": "assistant", "content": "Noted: I will look for train routes."}
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1767225600,
            "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 420, "completion_tokens": 18, "total_tokens": 438},
        }
    )


with SessionManager("sqlite:///agent.db", user="ada", config=config) as manager:
    chat = manager.create(name="trip", model="gpt-4.1-mini")
    with chat.turn() as ctx:  # one model call's view; only what it adds is stored
        ctx.add(Message.user("I hate flying; trains please."))
        while True:
            response = call_model(ctx.request("openai-chat"))
            reply = ctx.add(from_openai_chat([response.choices[0].message])[0])
            if response.usage is not None:  # the session's token counters
                usage = response.usage
                manager.add_usage(chat.id, usage.prompt_tokens, usage.completion_tokens)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:  # tool errors come back as results, never raise
                result = ctx.call_tool(call.name, call.arguments)
                ctx.add(Message(role="tool", parts=[result.to_part(call.id, call.name)]))

    print(chat.history()[-1].text)  # Noted: I will look for train routes.
    print(chat.message_count())  # 4
    print(chat.info().input_tokens, chat.info().output_tokens)  # 840 36
    # The memory block is per user: the next session starts with it in its prompt.
    print(manager.create().freeze_system_prompt().splitlines()[-1])  # Prefers trains to planes.
