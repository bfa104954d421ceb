"""A message's stored body: the shortcut for one plain text part writes what JSON would."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessionary import Message
from sessionary.model import TextPart, _encode, encode_body, part_to_dict


def _general(message: Message) -> str:
    body = dict(message.extra)
    body["parts"] = [part_to_dict(p) for p in message.parts]
    if message.metadata:
        body["metadata"] = message.metadata
    return _encode(body)


@given(st.text())
def test_a_plain_text_body_is_the_json_encoding(text: str) -> None:
    message = Message.user(text)
    assert encode_body(message) == _general(message)


@given(st.text(), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
def test_other_bodies_take_the_general_way(text: str, extra: dict[str, int]) -> None:
    for message in (
        Message.user(text, metadata={"k": 1}),
        Message("assistant", [TextPart(text, extra=extra)]),
        Message("assistant", [TextPart(text), TextPart(text)]),
    ):
        assert encode_body(message) == _general(message)
