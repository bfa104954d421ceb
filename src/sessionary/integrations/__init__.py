"""Drop-in integrations for agent frameworks, one module per framework.

Each module needs its framework's package, installed with an extra; nothing here is
imported until it is used, so `import sessionary` never pulls a framework in:

- `sessionary.integrations.openai_agents` (`sessionary[openai-agents]`): `SessionarySession`
- `sessionary.integrations.langchain` (`sessionary[langchain]`): `SessionaryChatMessageHistory`
- `sessionary.integrations.pydantic_ai` (`sessionary[pydantic-ai]`): `SessionaryMessageHistory`
- `sessionary.integrations.adk` (`sessionary[adk]`): `SessionarySessionService`

These names can also be imported from this package.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "SessionaryChatMessageHistory",
    "SessionaryMessageHistory",
    "SessionarySession",
    "SessionarySessionService",
]

_MODULES = {
    "SessionarySession": "openai_agents",
    "SessionaryChatMessageHistory": "langchain",
    "SessionaryMessageHistory": "pydantic_ai",
    "SessionarySessionService": "adk",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
