"""The type of the `reopen` fixture, importable by the block tests (a conftest is not)."""

from __future__ import annotations

from collections.abc import Callable

import sessionary

OpenScope = Callable[..., sessionary.SessionManager]
