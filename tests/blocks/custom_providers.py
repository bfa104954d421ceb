"""Custom block providers for the tests: plain objects, sync and async, recording calls."""

from __future__ import annotations

from sessionary import Entry, EntryHit


class Notes:
    """A writable provider held in memory."""

    def __init__(self, content: str | None = None) -> None:
        self.content = content
        self.inits: list[str] = []
        self.authors: list[str] = []

    def init(self, label: str) -> None:
        self.inits.append(label)

    def get(self) -> str | None:
        return self.content

    def set(self, content: str, author: str) -> None:
        self.content = content
        self.authors.append(author)


class AsyncNotes(Notes):
    """The same, with async methods."""

    async def get(self) -> str | None:  # type: ignore[override]
        return self.content

    async def set(self, content: str, author: str) -> None:  # type: ignore[override]
        self.content = content
        self.authors.append(author)


class Library:
    """A skill provider over a dict of entries, taking keyed writes."""

    def __init__(self, **docs: str) -> None:
        self.docs = {
            key: Entry(key, key.title(), f"about {key}", text) for key, text in docs.items()
        }

    def entries(self) -> list[Entry]:
        return [self.docs[key] for key in sorted(self.docs)]

    def load(self, key: str) -> str | None:
        entry = self.docs.get(key)
        return None if entry is None else entry.content

    def put(self, entry: Entry, author: str) -> None:
        self.docs[entry.key] = entry


class Index:
    """A searchable provider: an entry matches when it holds every word of the query."""

    def __init__(self, **docs: str) -> None:
        self.docs = dict(docs)

    def get(self) -> str:
        return f"{len(self.docs)} entries"

    def search(self, query: str, limit: int) -> list[EntryHit]:
        words = query.lower().split()
        found = [k for k, v in sorted(self.docs.items()) if all(w in v.lower() for w in words)]
        return [EntryHit(key, self.docs[key]) for key in found[:limit]]

    def put(self, entry: Entry, author: str) -> None:
        self.docs[entry.key] = entry.content


class Withheld:
    """A real store with some of its capabilities withheld (what an older backend offers)."""

    def __init__(self, store: object, *names: str) -> None:
        self._store = store
        self.capabilities = getattr(store, "capabilities", frozenset()) - set(names)

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)
