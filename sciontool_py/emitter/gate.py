"""Permission gates: every hook command passes one before it runs.

core-agent gates hook commands like the model's own bash calls, because the
config file that names them can be written by the model. A gate returns
None to allow a command, or the reason it refuses.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Protocol

from sciontool_py.errors import ConfigError


class PermissionGate(Protocol):
    def check(self, command: str) -> str | None:
        """None to let ``command`` run; otherwise the reason it is refused."""


class AllowAll:
    """Lets every command run: for callers whose hook config is trusted."""

    def check(self, command: str) -> str | None:
        return None


class DenyPatterns:
    """Refuses a command matching any pattern; allows the rest.

    A pattern is a glob matched against the whole command (trimmed), e.g.
    ``*rm -rf*``; ``re:`` starts a regular expression searched anywhere in
    it, e.g. ``re:\\bcurl\\b``.
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self._rules: list[tuple[str, re.Pattern[str]]] = []
        for pattern in patterns:
            if pattern.startswith("re:"):
                try:
                    compiled = re.compile(pattern[3:])
                except re.error as exc:
                    raise ConfigError(f"deny pattern {pattern!r}: {exc}") from None
            else:
                compiled = re.compile(fnmatch.translate(pattern))
            self._rules.append((pattern, compiled))

    def check(self, command: str) -> str | None:
        text = command.strip()
        for pattern, compiled in self._rules:
            matched = compiled.search(text) if pattern.startswith("re:") else compiled.match(text)
            if matched:
                return f"matches deny pattern {pattern!r}"
        return None
