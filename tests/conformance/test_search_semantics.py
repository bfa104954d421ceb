"""One search semantics on every store: the same hits, ranks, snippets and spans.

The corpus and the table below are fixed; every searchable store must answer every query
with exactly the listed messages. The semantics (see README "Search"): a word matches that
whole word, case- and accent-folded, never stemmed; ``word*`` matches every word starting
with it, never stemmed; a phrase matches its words in a row; the rank is the share of a
text's words the query matched; the snippet is the author's text and `spans` point at
the matched words in it.
"""

from __future__ import annotations

import random

import pytest

import sessionary
from sessionary import Message, ToolCallPart
from sessionary.query import parse_query, words
from sessionary.stores._textmatch import fold
from sessionary.stores.base import DOCUMENT_SEARCH, SEARCH

CORPUS = {
    "deploy-failed": "deployment failed: see **/var/log/app.log** (retry at 10:30)",
    "deploy-friday": "We deploy on Friday.",
    "deployed": "The build was deployed to staging",
    "redeploy": "redeploy the service with `make redeploy`",
    "cafe": "Meet at the Café Crème, naïve plan",
    "bold": "This is **important**: read the *docs* first",
    "runs": "running runners run",
    "lemurs": "lemurs and a lemur",
    "snake": "snake_case and foo-bar and x.y.z",
    "emoji": "Thinking🤔 the robot🤖 said postgres 🙂 ready 👍\U0001f3fdok",  # a skin tone
    "marks": "Yor\u00f9b\u00e1: \u1eb9\u0300k\u1ecd\u0301 means lesson",  # NFC, yet marks
}

TABLE: list[tuple[str, set[str]]] = [
    # A bare word is that whole word: no stemming, no prefix.
    ("deploy", {"deploy-friday"}),
    ("deployment", {"deploy-failed"}),
    ("deployed", {"deployed"}),
    ("run", {"runs"}),
    ("lemur", {"lemurs"}),
    ("lemurs", {"lemurs"}),
    # A prefix is never stemmed and matches any word starting with it.
    ("deploy*", {"deploy-failed", "deploy-friday", "deployed"}),
    ("deploym*", {"deploy-failed"}),
    ("deployed*", {"deployed"}),
    ("redeploy*", {"redeploy"}),
    ("run*", {"runs"}),
    ("lemur*", {"lemurs"}),
    # Case and accents are folded on both sides.
    ("DEPLOY", {"deploy-friday"}),
    ("cafe", {"cafe"}),
    ("CAFÉ", {"cafe"}),
    ("naive creme", {"cafe"}),
    # Phrases are words in a row; punctuation splits words.
    ('"deploy on friday"', {"deploy-friday"}),
    ('"friday on deploy"', set()),
    ("app.log", {"deploy-failed"}),
    ('"var log app"', {"deploy-failed"}),
    ("foo-bar", {"snake"}),
    ("snake_case", {"snake"}),
    ("x.y.z", {"snake"}),
    ("10:30", {"deploy-failed"}),
    # Markdown is punctuation: `**` is not part of a word.
    ("important", {"bold"}),
    ("docs", {"bold"}),
    # AND, OR, exclusions.
    ("deploy* staging", {"deployed"}),
    ("friday OR staging", {"deploy-friday", "deployed"}),
    ("deploy* -friday", {"deploy-failed", "deployed"}),
    ('deploy* -"was deployed"', {"deploy-failed", "deploy-friday"}),
    ("nothing", set()),
    # Phrases and prefixes in one query (InnoDB alone missed these: see `to_boolean_mode`).
    ("app.log deploy*", {"deploy-failed"}),
    ('"var log" OR nothing ret*', {"deploy-failed"}),
    ("foo-bar sna*", {"snake"}),
    ("10:30 OR x.y.z ret*", {"deploy-failed"}),
    ("x.y.z -deploy*", {"snake"}),
    ('deploy* -"see var"', {"deploy-friday", "deployed"}),
    # Emoji (of any Unicode version) and combining marks that NFC leaves alone separate
    # words, as punctuation does: an index whose Unicode tables are older still agrees.
    ("thinking", {"emoji"}),
    ("robot", {"emoji"}),
    ("robot🤖", {"emoji"}),
    ('"postgres ready"', {"emoji"}),
    ('"said postgres 🙂 ready ok"', {"emoji"}),
    ("ok", {"emoji"}),
    ("\u1eb9\u0300k\u1ecd\u0301", {"marks"}),
    ('"\u1eb9\u0300k\u1ecd\u0301 means"', {"marks"}),
    ("yoruba", {"marks"}),
]


@pytest.fixture
def corpus(manager: sessionary.SessionManager) -> sessionary.SessionManager:
    chat = manager.create(id="corpus")
    chat.append_all([Message.user(text, id=key) for key, text in CORPUS.items()])
    return manager


@pytest.mark.requires(SEARCH)
@pytest.mark.parametrize(("query", "expected"), TABLE, ids=[q for q, _ in TABLE])
def test_every_store_finds_the_same_messages(
    corpus: sessionary.SessionManager, query: str, expected: set[str]
) -> None:
    hits = corpus.search(query, limit=50)
    assert {hit.message_id for hit in hits} == expected
    for hit in hits:
        assert hit.snippet == " ".join(CORPUS[hit.message_id].split())  # as written
        assert hit.spans and all(0 <= a < b <= len(hit.snippet) for a, b in hit.spans)
        assert 0 < hit.rank <= 1


def _random_query(rng: random.Random, texts: list[list[str]]) -> str:
    """A query of up to three groups of words, phrases (runs of a text) and prefixes."""

    def term() -> str:
        text = rng.choice(texts)
        at = rng.randrange(len(text))
        kind = rng.random()
        if kind < 0.35 and at + 1 < len(text):
            return '"' + " ".join(text[at : at + rng.randint(2, 3)]) + '"'
        if kind < 0.7:
            return text[at][: rng.randint(1, len(text[at]))] + "*"
        return text[at]

    groups = [
        " OR ".join(term() for _ in range(rng.randint(1, 2))) for _ in range(rng.randint(1, 3))
    ]
    excluded = [f"-{term()}" for _ in range(rng.randint(0, 1))]
    return " ".join(groups + excluded)


@pytest.mark.requires(SEARCH)
def test_random_queries_find_what_the_reference_store_finds(
    corpus: sessionary.SessionManager,
) -> None:
    reference = sessionary.SessionManager("memory://")
    reference.create(id="corpus").append_all(
        [Message.user(text, id=key) for key, text in CORPUS.items()]
    )
    texts = [[w for w in words(fold(text)) if len(w) > 1] for text in CORPUS.values()]
    rng = random.Random(20261128)
    for _ in range(150):
        query = _random_query(rng, [t for t in texts if t])
        found = {hit.message_id for hit in corpus.search(query, limit=50)}
        assert found == {hit.message_id for hit in reference.search(query, limit=50)}, query


@pytest.mark.requires(SEARCH)
def test_ranks_are_the_share_of_words_matched_and_equal_everywhere(
    corpus: sessionary.SessionManager,
) -> None:
    hits = corpus.search("deploy*")
    assert [(h.message_id, h.rank) for h in hits] == [
        ("deploy-friday", pytest.approx(1 / 4)),  # 1 of "We deploy on Friday"
        ("deployed", pytest.approx(1 / 6)),
        ("deploy-failed", pytest.approx(1 / 11)),
    ]


@pytest.mark.requires(SEARCH)
def test_spans_point_at_the_matched_words_and_never_at_markdown(
    corpus: sessionary.SessionManager,
) -> None:
    (hit,) = corpus.search("important OR docs")
    assert hit.snippet == CORPUS["bold"]
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["important", "docs"]
    (hit,) = corpus.search('"see var log"')
    assert "**/var/log/app.log**" in hit.snippet  # the author's markdown, untouched
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["see", "var", "log"]
    (hit,) = corpus.search("CAFE")
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["Café"]
    assert all(fold(hit.snippet[a:b]) == "cafe" for a, b in hit.spans)


@pytest.mark.requires(SEARCH)
def test_a_long_text_gives_a_window_with_spans_inside_it(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    text = " ".join(f"w{i}" for i in range(200)) + "  **needle**,\n\nhere " + "tail " * 100
    m = chat.append(Message.user(text))
    (hit,) = manager.search("needle")
    assert hit.message_id == m.id
    assert hit.snippet.startswith("… ") and hit.snippet.endswith(" …")
    assert "**needle**, here" in hit.snippet  # whitespace runs shown as one space
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["needle"]
    assert len(hit.snippet) < 200


@pytest.mark.requires(SEARCH)
def test_tool_calls_are_searched_on_their_text(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chat.append(Message.user("list it"))
    call = ToolCallPart(id="c1", name="read_file", arguments={"path": "notes/deploy.md"})
    m = chat.append(Message.assistant(tool_calls=[call]))
    (hit,) = manager.search("deploy.md")
    assert hit.message_id == m.id
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["deploy", "md"]


@pytest.mark.requires(SEARCH)
def test_a_message_in_a_parent_and_its_fork_is_one_hit_per_session(
    manager: sessionary.SessionManager,
) -> None:
    parent = manager.create(id="parent")
    m = parent.append(Message.user("the quokka smiles"))
    parent.append(Message.assistant("indeed"))
    manager.fork("parent", id="child")
    hits = manager.search("quokka")
    assert sorted((h.session_id, h.message_id) for h in hits) == [
        ("child", m.id),
        ("parent", m.id),
    ]
    assert [h.session_id for h in manager.search("quokka", session_id="child")] == ["child"]


@pytest.mark.requires(DOCUMENT_SEARCH)
def test_documents_follow_the_same_semantics(manager: sessionary.SessionManager) -> None:
    store, owner = manager.store, (manager.scope, "user", None)
    for key, text in CORPUS.items():
        store.put_document(*owner, "notes", key, {"text": text}, text, "user", None)
    for query, expected in TABLE:
        hits = store.search_documents(*owner, None, parse_query(query), 50)
        assert {hit.key for hit in hits} == expected, query
        for hit in hits:
            assert hit.snippet == " ".join(CORPUS[hit.key].split())
            assert all(fold(hit.snippet[a:b]) for a, b in hit.spans)
