"""The conversation every library stores: the same turns, in the same order, for all of them."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Turn", "conversation", "read_texts", "text_lengths"]

_POOL_SIZE = 997  # prime, so role and text do not fall into a short shared cycle
_SEED = 20240611

_VOCABULARY = (
    "the session stores every message with its parent so branches and edits stay cheap "
    "agent tool result query database latency retry budget schedule customer invoice "
    "summary context window tokens model reply user asked whether we could compare the "
    "numbers from last week and explain why the report shows a different total than the "
    "dashboard because the export ran before the late orders were reconciled yesterday"
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the benchmark conversation, independent of any library."""

    role: str  # "user" or "assistant"
    text: str


def _texts() -> list[str]:
    rng = random.Random(_SEED)
    vocabulary = _VOCABULARY.split()
    texts = []
    for _ in range(_POOL_SIZE):
        target = rng.randint(200, 400)
        words: list[str] = []
        length = 0
        while length < target:
            word = rng.choice(vocabulary)
            words.append(word)
            length += len(word) + 1
        texts.append(" ".join(words)[: target - 1].capitalize() + ".")
    return texts


_TEXTS = _texts()


def conversation(start: int, count: int) -> list[Turn]:
    """Return turns ``start`` .. ``start + count - 1`` of the endless benchmark conversation."""
    return [
        Turn("user" if index % 2 == 0 else "assistant", _TEXTS[index % _POOL_SIZE])
        for index in range(start, start + count)
    ]


def text_lengths() -> tuple[int, int]:
    """Return the shortest and longest message text, for the report."""
    lengths = [len(text) for text in _TEXTS]
    return min(lengths), max(lengths)


def read_texts(messages: Iterable[Any]) -> int:
    """Read every message's text, as a caller does; return how many there were.

    sessionary decodes a message's body on first use: a timed read touches each text so it
    pays for what the raw readers' `json.loads` of every row pays for.
    """
    return len([message.text for message in messages])
