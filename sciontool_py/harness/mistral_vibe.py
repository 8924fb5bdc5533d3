"""Mistral Vibe (3.0.2 tried): `[[hooks]]` tables in `.vibe/hooks.toml` or `~/.vibe/hooks.toml`
(`$VIBE_HOME/hooks.toml` when set).

Vibe runs each hook's command through the shell with a JSON object on stdin
and reads stdout as its answer (empty: go on). Names must be unique across
both files. A project's file loads only in a folder the user trusted.
"""

from __future__ import annotations

import json
import os
import re

from sciontool_py.errors import SciontoolError
from sciontool_py.harness import record, textblock, tomltables
from sciontool_py.harness.base import Edit, Scope, TextHarness, routed_events, user_home
from sciontool_py.harness.files import read_text, resolve_target
from sciontool_py.harness.tomledit import _parse

FIRED = ("pre_tool", "post_tool", "post_agent")
_PREFIX = "sciontool-"  # our hooks' names: sciontool-pre_tool, ...
# tomlkit reads 64 KiB in 0.19 s of CPU, 256 KiB in 0.60 s: install reads it up to three times.
MAX_BYTES = 64 << 10
# The lines an older version wrote inside its marked block: `[[hooks]]` and `KEY = "..."`.
_SHAPE = re.compile(r'\[\[hooks\]\]|(?:name|type|command) = "(?:[^"\\]|\\.)*"')
NOTE = "Vibe loads a project's .vibe/hooks.toml only in a trusted folder (`vibe --trust` or its prompt)."


class MistralVibe(TextHarness):
    name = "mistral-vibe"
    dialect = "mistral-vibe"
    max_bytes = MAX_BYTES

    def target(self, scope: Scope) -> tuple[str, str]:
        if scope.project is None:
            vibe_home = os.environ.get("VIBE_HOME")
            if vibe_home:
                return vibe_home, "hooks.toml"
            return user_home(), os.path.join(".vibe", "hooks.toml")
        return scope.project, os.path.join(".vibe", "hooks.toml")

    def notes(self, scope: Scope) -> list[str]:
        return [NOTE] if scope.project is not None else []

    def entries(self, scope: Scope) -> list[dict[str, str]]:
        command = scope.hook_command(self.dialect)
        return [
            {"name": f"{_PREFIX}{event}", "type": event, "command": command}
            for event in routed_events(self.dialect, FIRED)
        ]

    def tables(self, scope: Scope, newline: str = "\n") -> str:
        """Our `[[hooks]]` tables as TOML text."""
        lines: list[str] = []
        for entry in self.entries(scope):
            lines.append("[[hooks]]")
            lines.extend(f"{key} = {json.dumps(value)}" for key, value in entry.items())
        return "".join(line + newline for line in lines)

    def install(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = read_text(path, self.max_bytes)
        text = before or ""
        pristine, old = self._unwired(text, path)  # a reinstall starts again from the user's own file
        tables = self.tables(scope, textblock.newline_of(pristine))
        after, separator = tomltables.add(pristine, "hooks", tables, path)
        if after == text:
            return [Edit(path, before, before, "already wired", self.notes(scope))]
        self._check(after, path, {**old, "hooks": [*_hooks(old), *self.entries(scope)]})
        # What uninstall will do must give back the user's file, byte for byte, or nothing is written.
        if tomltables.remove(after, "hooks", _ours, separator, path) != pristine:
            raise SciontoolError(
                f"{path}: cannot add sciontool's [[hooks]] so that uninstall gives back every byte; "
                "left untouched: `sciontool harness show mistral-vibe` prints what to add"
            )
        created: list[tuple[str, ...]] = [(textblock.SEPARATOR, separator)] if separator else []
        summary = f"added sciontool hooks for {', '.join(e['type'] for e in self.entries(scope))}"
        return [Edit(path, before, after, summary, self.notes(scope), installs=True, created_keys=created)]

    def _unwired(self, text: str, path: str) -> tuple[str, dict[str, object]]:
        """The text without our tables (or the marked block an older version wrote instead) and
        the separator install put before them, and its settings: exactly those of text but ours,
        or nothing is written."""
        old = _parse(text, path)  # its bounds (size, depth, a key's parts) before tomlkit reads it
        separator = next((k[1] for k in record.keys(path) if k[:1] == (textblock.SEPARATOR,)), "")
        after = textblock.remove(text, textblock.Where(path, self.name, _SHAPE), separator)
        if after is None:
            # tomlkit is slow (0.55 s of CPU for 256 KiB): read by it only a file with a name of ours
            after = tomltables.remove(text, "hooks", _ours, separator, path) if _PREFIX in text else text
        if after == text:
            return text, old
        rest = [h for h in _hooks(old) if not _ours(h)]
        expected = {k: v for k, v in old.items() if k != "hooks"}
        if rest or "hooks" in _parse(after, path):
            expected["hooks"] = rest
        self._check(after, path, expected)
        return after, expected

    def _check(self, text: str, path: str, expected: dict[str, object]) -> None:
        try:
            got = _parse(text, path)
        except SciontoolError:
            got = None
        if got is None or _sorted(got) != _sorted(expected):  # ours may sit among the user's
            raise SciontoolError(
                f"{path}: cannot add or remove sciontool's [[hooks]] without changing the rest "
                "(is `hooks` an inline array?); left untouched"
            )

    def show(self, scope: Scope) -> str:
        root, relative = self.target(scope)
        note = "".join(f"# {n}\n" for n in self.notes(scope))
        return f"# added to the [[hooks]] of {os.path.join(root, relative)}\n{self.tables(scope)}{note}"


def _hooks(data: dict[str, object]) -> list[object]:
    hooks = data.get("hooks")
    return hooks if isinstance(hooks, list) else []


def _sorted(data: dict[str, object]) -> dict[str, object]:
    return {**data, "hooks": sorted(json.dumps(h, sort_keys=True) for h in _hooks(data))}


def _ours(hook: object) -> bool:
    return isinstance(hook, dict) and str(hook.get("name", "")).startswith(_PREFIX)
