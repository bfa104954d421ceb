"""sessionary as a service: an HTTP API with a web viewer, and an MCP server.

Install with ``pip install 'sessionary[server]'``. `create_app` builds the ASGI app over
any store; `Keyring` makes and checks the API keys it requires; `create_mcp_server`
offers a session's memory tools over MCP. `sessionary.server.commands` holds the
command functions behind ``sessionary serve``, ``sessionary mcp`` and ``sessionary keys``.
"""

from sessionary.server._errors import STATUS, error_body, status_of
from sessionary.server.app import DEFAULT_MAX_BODY, create_app
from sessionary.server.keys import KEYS_TENANT, ApiKey, Keyring

__all__ = [
    "DEFAULT_MAX_BODY",
    "KEYS_TENANT",
    "STATUS",
    "ApiKey",
    "Keyring",
    "create_app",
    "error_body",
    "status_of",
]
