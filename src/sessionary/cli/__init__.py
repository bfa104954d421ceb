"""The `sessionary` command line: thin click commands over the synchronous `SessionManager`.

```
sessionary [--db URL] [--tenant T] [--user U] [--no-pager] COMMAND ...
```

The commands live in the modules of this package (`_read`: ls, show, search, scopes;
`_inspect`: inspect, context; `_write`: export, import, rm, migrate, demo; `_schema`:
schema; `_governance`: rekey, audit, erase, sweep; `_serve`: serve, mcp, keys; `_extra`:
examples, completion), the group and its options in `_app`, and how things are drawn in
`_views` (rich renderables). `--db` defaults to the `SESSIONARY_URL` environment
variable, else `./sessionary.db`; with `SESSIONARY_KEYS` set, every command reads and
writes through encryption at rest. Every error prints one line, `sessionary: error:
...`, and exits with status 1; usage errors exit with 2 and an interrupt with 130.
"""

from __future__ import annotations

from sessionary.cli import (  # noqa: F401 - they add commands
    _extra,
    _governance,
    _inspect,
    _read,
    _schema,
    _serve,
    _write,
)
from sessionary.cli._app import DEFAULT_DB, ENV_URL, CLIError, main, root

__all__ = ["DEFAULT_DB", "ENV_URL", "CLIError", "main", "root"]
