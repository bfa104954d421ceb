"""The integrations package: its names resolve lazily, and the core never imports a framework."""

from __future__ import annotations

import subprocess
import sys

import pytest

import sessionary.integrations as integrations

EXPECTED = {
    "SessionarySession": "sessionary.integrations.openai_agents",
    "SessionaryChatMessageHistory": "sessionary.integrations.langchain",
    "SessionaryMessageHistory": "sessionary.integrations.pydantic_ai",
    "SessionarySessionService": "sessionary.integrations.adk",
}


def test_names_are_pinned_and_resolve_to_their_modules() -> None:
    assert set(integrations.__all__) == set(EXPECTED)
    assert set(dir(integrations)) == set(EXPECTED)
    for name, module in EXPECTED.items():
        assert getattr(integrations, name).__module__ == module


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        _ = integrations.NoSuchThing


def test_importing_sessionary_imports_no_framework() -> None:
    code = (
        "import sys, sessionary, sessionary.integrations; "
        "loaded = {'agents', 'langchain_core', 'pydantic_ai', 'google.adk'} & set(sys.modules); "
        "print(sorted(loaded))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_name_encoding_is_one_for_every_integration() -> None:
    from sessionary.integrations import _common, adk

    assert (adk.encode_name, adk.decode_name) == (_common.encode_name, _common.decode_name)
    assert _common.encode_name("chat-42", "session_id") == "chat-42"  # valid ids unchanged
    for name in ("user@example.com", "thread:42/1", "conv 1", "ü", "x.1", "x.zz"):
        encoded = _common.encode_name(name, "session_id")
        assert encoded.startswith("x.")
        assert _common.decode_name(encoded) == name
