"""Mixins for a store of your own that leaves out a capability (pure: no I/O).

A store without full-text search or documents still has to answer those methods of the
protocol, with `Unsupported`; inherit these instead of writing them. Each method raises
as soon as it is called, so the same mixin serves a synchronous store and an async one
(an `await` of the call raises before it awaits anything)::

    class MyStore(NoSearch, NoDocuments):
        capabilities = frozenset()
        max_message_bytes = 1 << 20
        ...  # the core methods (see `sessionary.stores.base`)

A store that has search but not documents inherits `NoDocuments` only, and lists
``"search"`` in its `capabilities`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from sessionary.errors import Unsupported

__all__ = ["NoDocuments", "NoSearch"]


class NoSearch:
    """`search` for a store without the ``search`` capability: raises `Unsupported`."""

    def search(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Raise `Unsupported`: this store has no full-text search."""
        raise Unsupported(f"{type(self).__name__} has no full-text search")


class NoDocuments:
    """The document methods for a store without ``documents`` (nor ``document_search``).

    Without documents, the features stored as documents are unavailable (they raise
    `Unsupported` or say so): compaction overlays, blocks without a provider of their
    own, a persisted frozen prompt, loaded skills and agent state. Export, import and
    `migrate` copy everything else.
    """

    def _no_documents(self) -> NoReturn:
        raise Unsupported(f"{type(self).__name__} has no documents")

    def put_document(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Raise `Unsupported`."""
        self._no_documents()

    def get_document(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Raise `Unsupported`."""
        self._no_documents()

    def list_documents(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Raise `Unsupported`."""
        self._no_documents()

    def document_versions(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Raise `Unsupported`."""
        self._no_documents()

    def delete_document(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Raise `Unsupported`."""
        self._no_documents()

    def restore_document(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Raise `Unsupported`."""
        self._no_documents()

    def search_documents(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Raise `Unsupported`."""
        self._no_documents()
