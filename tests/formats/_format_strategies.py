"""Hypothesis strategies: conversations in the shape every format can carry exactly."""

from __future__ import annotations

import base64
import string

from hypothesis import strategies as st

from sessionary import FilePart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

texts = st.text(alphabet=string.ascii_letters + " .,!?é\n", min_size=1, max_size=20)
names = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=8)
scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | texts
arguments = st.dictionaries(names, scalars | st.lists(scalars, max_size=3), max_size=3)
outputs = texts | st.dictionaries(names, scalars, min_size=1, max_size=3)
b64 = st.binary(min_size=1, max_size=12).map(lambda b: base64.b64encode(b).decode())


@st.composite
def conversations(
    draw: st.DrawFn, *, images: bool = True, signed: bool = True, errors: bool = True
) -> list[Message]:
    """A system prompt, then turns: user, assistant (maybe calling tools), their results."""
    out = [Message.system(draw(texts))]
    counter = 0
    for _ in range(draw(st.integers(1, 3))):
        parts: list = [TextPart(draw(texts))]
        if images and draw(st.booleans()):
            parts.append(FilePart("image/png", data=draw(b64)))
        out.append(Message(role="user", parts=parts))
        assistant: list = []
        if signed and draw(st.booleans()):
            assistant.append(ReasoningPart(draw(texts), signature=draw(b64)))
        if draw(st.booleans()):
            assistant.append(TextPart(draw(texts)))
        calls = []
        for _ in range(draw(st.integers(0 if assistant else 1, 2))):
            counter += 1
            calls.append(ToolCallPart(f"call_{counter}", draw(names), draw(arguments)))
        out.append(Message(role="assistant", parts=assistant + calls))
        for call in calls:
            failed = errors and draw(st.booleans())
            output = draw(texts if failed else outputs)
            result = ToolResultPart(call.id, output, is_error=failed)
            out.append(Message(role="tool", parts=[result]))
    return out
