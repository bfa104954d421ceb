"""A skill provider over a local folder of documents (markdown or plain text).

Each file is one entry; its key is its path below the folder without the extension
(``guides/deploy.md`` is ``guides/deploy``). A file may start with front matter::

    ---
    title: Deploying
    description: How to ship a release
    ---

Without a title, the first ``# heading`` is used; without a description, the title. The
folder is read when the block is read, so files added later show up; nothing outside
the folder can be loaded, whatever key the model asks for.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from sessionary.blocks import Entry
from sessionary.errors import InvalidInput

__all__ = ["FolderSkills", "parse_front_matter"]

_SUFFIXES = (".md", ".markdown", ".txt")
_MAX_FILE_BYTES = 1024 * 1024


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split `key: value` front matter between ``---`` lines from the body.

    Only flat string fields are read (quotes around a value are dropped); text without
    front matter comes back whole with no fields.
    """
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            return _fields(lines[1:end]), "".join(lines[end + 1 :]).lstrip("\r\n")
    return {}, text


def _fields(lines: Iterable[str]) -> dict[str, str]:
    fields = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep and name.strip():
            fields[name.strip().lower()] = value.strip().strip("\"'")
    return fields


def _first_heading(body: str) -> str:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


class FolderSkills:
    """Skill documents read from a local folder (readonly: the model cannot write files).

    Args:
        folder: The folder to list, recursively.
        keys: If given, only these keys are listed and loadable.

    Raises:
        InvalidInput: If `folder` is not a directory.
    """

    def __init__(self, folder: str | os.PathLike[str], *, keys: Iterable[str] | None = None):
        self.folder = Path(folder).resolve()
        if not self.folder.is_dir():
            raise InvalidInput(f"skill folder {str(folder)!r} is not a directory")
        self.allowed = None if keys is None else frozenset(keys)

    def _files(self) -> dict[str, Path]:
        found = {}
        for path in sorted(self.folder.rglob("*")):
            if path.suffix.lower() in _SUFFIXES and path.is_file():
                key = path.relative_to(self.folder).with_suffix("").as_posix()
                if self.allowed is None or key in self.allowed:
                    found[key] = path
        return found

    def _read(self, path: Path) -> tuple[dict[str, str], str]:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_FILE_BYTES + 1)
        text = raw[:_MAX_FILE_BYTES].decode("utf-8", errors="replace")
        return parse_front_matter(text)

    def entries(self) -> list[Entry]:
        """Return one entry per document, by key (contents left empty)."""
        listed = []
        for key, path in self._files().items():
            fields, body = self._read(path)
            title = fields.get("title") or _first_heading(body)
            listed.append(Entry(key, title, fields.get("description") or title))
        return listed

    def load(self, key: str) -> str | None:
        """Return a document's body (without its front matter), or None."""
        path = self._files().get(key)
        if path is None:
            return None
        return self._read(path)[1]
