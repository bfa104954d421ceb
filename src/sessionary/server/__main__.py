"""``python -m sessionary.server``: serve, mcp and keys, until the main CLI offers them.

```
python -m sessionary.server serve [--db URL] [--host H] [--port P] [--no-auth] [--cors ORIGIN]
python -m sessionary.server mcp [--db URL] [--transport stdio|http] [--session ID] [--block SPEC]
python -m sessionary.server keys create TENANT [--user U] [--name N]
python -m sessionary.server keys list [--tenant T]
python -m sessionary.server keys revoke KEY_ID
```
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from sessionary.errors import SessionaryError
from sessionary.server import commands

ENV_URL = "SESSIONARY_URL"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sessionary.server")
    parser.add_argument("--db", default=os.environ.get(ENV_URL, "sessionary.db"))
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="the HTTP API, its docs and the web viewer")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--no-auth", action="store_true", help="no API keys (loopback only)")
    serve.add_argument("--tenant", default="default", help="the tenant served with --no-auth")
    serve.add_argument("--cors", action="append", default=[], metavar="ORIGIN")
    mcp = sub.add_parser("mcp", help="the memory tools over MCP")
    mcp.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    mcp.add_argument("--tenant", default="default")
    mcp.add_argument("--user", default="default")
    mcp.add_argument("--session", metavar="ID", help="bind every call to this session")
    mcp.add_argument("--block", action="append", metavar="LABEL[:KIND[:LEVEL]]")
    mcp.add_argument("--no-history", action="store_true", help="no session history tools")
    mcp.add_argument("--host", default="127.0.0.1")
    mcp.add_argument("--port", type=int, default=8001)
    keys = sub.add_parser("keys", help="make, list and revoke API keys")
    verbs = keys.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help="make a key (its token is printed once)")
    create.add_argument("tenant")
    create.add_argument("--user", help="bind the key to one user of the tenant")
    create.add_argument("--name", default="")
    listing = verbs.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--tenant")
    revoke = verbs.add_parser("revoke", help="revoke a key")
    revoke.add_argument("key_id")
    return parser


def _keys(args: argparse.Namespace) -> None:
    if args.verb == "create":
        key, token = commands.create_key(args.db, args.tenant, args.user, args.name)
        print(json.dumps({**key.to_dict(), "token": token}))
    elif args.verb == "list":
        for found in commands.list_keys(args.db, args.tenant):
            print(json.dumps(found.to_dict()))
    else:
        print(json.dumps(commands.revoke_key(args.db, args.key_id).to_dict()))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; errors print one line and exit 1."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            commands.serve(
                args.db,
                host=args.host,
                port=args.port,
                auth=not args.no_auth,
                tenant=args.tenant,
                cors_origins=args.cors,
            )
        elif args.command == "mcp":
            commands.mcp(
                args.db,
                transport=args.transport,
                tenant=args.tenant,
                user=args.user,
                session_id=args.session,
                blocks=args.block or commands.DEFAULT_MCP_BLOCKS,
                history=not args.no_history,
                host=args.host,
                port=args.port,
            )
        else:
            _keys(args)
    except SessionaryError as exc:
        print(f"sessionary: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
