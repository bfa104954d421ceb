"""A message's stored body: the shortcut for one plain text part writes what JSON would."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionary import Message
from sessionary.errors import InvalidMessage, PayloadTooLarge
from sessionary.model import (
    TextPart,
    _encode,
    encode_body,
    message_text,
    part_to_dict,
    plain_body_text,
)
from sessionary.stores._common import check_text, prepare_messages


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
    assert plain_body_text(encode_body(message)) == text


@given(st.text(), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
def test_other_bodies_take_the_general_way(text: str, extra: dict[str, int]) -> None:
    for message in (
        Message.user(text, metadata={"k": 1}),
        Message("assistant", [TextPart(text, extra=extra)]),
        Message("assistant", [TextPart(text), TextPart(text)]),
    ):
        assert encode_body(message) == _general(message)


_TAIL = '","type":"text"}]}'


@given(st.text(), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
def test_only_a_plain_text_body_gives_its_text_back(text: str, extra: dict[str, int]) -> None:
    # Bodies that start and end as a plain one does, or whose text does, are not plain.
    for message in (
        Message.user(text, metadata={"k": 1}),
        Message("assistant", [TextPart(text, extra=extra or {"x": 1})]),
        Message("assistant", [TextPart(text), TextPart(text)]),
        Message("assistant", [TextPart(text + _TAIL), TextPart(text + _TAIL)]),
    ):
        assert plain_body_text(encode_body(message)) is None
    assert plain_body_text(encode_body(Message.user(text + _TAIL))) == text + _TAIL


@given(st.text(), st.booleans())
def test_a_plain_message_is_prepared_as_the_general_way_would(text: str, indexed: bool) -> None:
    # `prepare_messages` builds a plain message's body and search text without the general
    # encoder; both, and the size checked against the limit, are what the general way gives.
    message = Message.user(text)
    general = _general(message)  # (a lone surrogate is kept as is, not refused)
    try:
        size = len(general.encode())
    except UnicodeEncodeError:
        with pytest.raises(InvalidMessage, match="lone surrogate"):
            prepare_messages([message], 1 << 30, indexed=indexed)
        return
    (prepared,) = prepare_messages([message], 1 << 30, indexed=indexed)
    assert prepared.body == general
    assert prepared.text == (message_text(message) if indexed else "")
    with pytest.raises(PayloadTooLarge, match=f"is {size} bytes"):
        prepare_messages([message], size - 1, indexed=indexed)


@given(st.text())
def test_the_size_of_text_is_its_utf8_size(text: str) -> None:
    try:
        size = len(text.encode())
    except UnicodeEncodeError:
        with pytest.raises(InvalidMessage):
            check_text(text, "text", InvalidMessage)
        return
    assert check_text(text, "text") == size
