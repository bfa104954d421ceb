"""Pure parts: labels, keys, configs, rendering, argument checking (no store)."""

from __future__ import annotations

import pytest
from custom_providers import Index, Library, Notes

from sessionary import BlockSpec, ContextBlock, InvalidInput, SessionConfig
from sessionary.blocks import ValueProvider, check_key, check_label, entry_key, kind_of
from sessionary.prompt import RULE, render_block, render_header, render_prompt
from sessionary.toolspec import check_arguments, parse_arguments


def test_entry_keys_come_from_the_title_or_the_content() -> None:
    assert entry_key("Deploy Steps!", "x") == "deploy-steps"
    assert entry_key("Deploy Steps!", "other content") == "deploy-steps"
    cyrillic = entry_key("Привет", "x")
    assert cyrillic.startswith("entry-") and cyrillic != entry_key("Пока", "x")
    a, b = entry_key(None, "User likes tea"), entry_key("  ", "User likes coffee")
    assert a.startswith("user-likes-tea-") and b.startswith("user-likes-coffee-")
    assert entry_key(None, "???").startswith("entry-")
    assert entry_key(None, "same") == entry_key("", "same")


def test_labels_and_keys_are_checked() -> None:
    assert check_label("memory_1") == "memory_1"
    for bad in ("", "has space", "-dash", "a" * 65, 3, "a.b"):
        with pytest.raises(InvalidInput):
            check_label(bad)
    assert check_key("guides/deploy") == "guides/deploy"
    for bad in ("", "x" * 513, "a\nb", None):
        with pytest.raises(InvalidInput):
            check_key(bad)


def test_kinds_follow_the_provider() -> None:
    assert kind_of(Notes()) == "writable"
    assert kind_of(Library()) == "skill"
    assert kind_of(Index()) == "searchable"
    assert kind_of(ValueProvider("hi")) == "readonly"
    with pytest.raises(InvalidInput, match="not a block provider"):
        kind_of(object())


def test_block_specs_refuse_bad_fields() -> None:
    with pytest.raises(InvalidInput, match="positive integer"):
        BlockSpec("memory", limit=0)
    with pytest.raises(InvalidInput, match="level"):
        BlockSpec("memory", level="galaxy")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="only to stored blocks"):
        BlockSpec("memory", "text", kind="skill")
    with pytest.raises(InvalidInput, match="not a block provider"):
        BlockSpec("memory", object())
    assert isinstance(BlockSpec("soul", "You are kind.").provider(), ValueProvider)
    assert isinstance(BlockSpec("soul", lambda: "x").provider(), ValueProvider)
    assert BlockSpec("memory").provider() is None


def test_config_builder_returns_new_configs_and_refuses_duplicates() -> None:
    base = SessionConfig()
    built = base.with_block("soul", "hi").with_block("memory", limit=10).with_cached_prompt()
    assert base.blocks == () and not base.cached_prompt
    assert [b.label for b in built.blocks] == ["soul", "memory"] and built.cached_prompt
    plain = SessionConfig(blocks=(BlockSpec("soul", "hi"), BlockSpec("memory", limit=10)),
                          cached_prompt=True)  # fmt: skip
    assert plain == built
    with pytest.raises(InvalidInput, match="unique"):
        built.with_block("soul", "again")
    with pytest.raises(InvalidInput, match="unique"):
        built.with_searchable_history("memory")
    with pytest.raises(InvalidInput, match="token_counter"):
        SessionConfig(token_counter=42)  # type: ignore[arg-type]
    assert SessionConfig(token_counter=len).text_counter()("abcd") == 4


def test_headers_show_label_description_kind_and_usage() -> None:
    block = ContextBlock("memory", "writable", "x", 495, "Learned facts", 1100)
    assert render_header(block) == "MEMORY: Learned facts [writable · 45% of 1100 tokens]"
    assert render_header(ContextBlock("soul", "readonly", "x", 1)) == "SOUL [readonly]"
    assert render_header(ContextBlock("docs", "skill", "", 0)) == "DOCS [loadable]"
    assert render_header(ContextBlock("kb", "searchable", "", 0)) == "KB [searchable]"
    assert render_block(ContextBlock("soul", "readonly", "Be kind.", 2)).splitlines() == [
        RULE,
        "SOUL [readonly]",
        RULE,
        "Be kind.",
    ]


def test_prompt_skips_only_empty_readonly_blocks() -> None:
    prompt = render_prompt([
        ContextBlock("soul", "readonly", "", 0),
        ContextBlock("memory", "writable", "", 0),
        ContextBlock("docs", "skill", "", 0),
    ])  # fmt: skip
    assert "SOUL" not in prompt
    assert "MEMORY [writable]\n" in prompt and "(empty)" in prompt
    assert "DOCS [loadable]" in prompt and "(no documents yet)" in prompt
    assert "<" not in prompt  # no XML


SCHEMA = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": ["memory"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 5},
        "key": {"type": "string", "minLength": 1},
    },
    "required": ["label"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "missing required argument 'label'"),
        ({"label": "soul"}, 'must be one of "memory"'),
        ({"label": 3}, "must be a string, not integer"),
        ({"label": "memory", "limit": True}, "must be a integer, not boolean"),
        ({"label": "memory", "limit": 9}, "at most 5"),
        ({"label": "memory", "key": ""}, "must not be empty"),
        ({"label": "memory", "extra": 1}, "unknown argument 'extra'"),
    ],
)
def test_arguments_are_checked_against_the_schema(arguments: dict, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem.replace("(", r"\(")):
        check_arguments(SCHEMA, arguments)


def test_arguments_parse_from_json_or_mappings() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments({"a": 1}) == {"a": 1}
    assert parse_arguments("") == {} and parse_arguments(None) == {}
    with pytest.raises(InvalidInput, match="not valid JSON"):
        parse_arguments("{oops")
    with pytest.raises(InvalidInput, match="JSON object"):
        parse_arguments("[1, 2]")
    with pytest.raises(InvalidInput, match="nested too deep"):  # was a RecursionError
        parse_arguments("[" * 100_000 + "]" * 100_000)
