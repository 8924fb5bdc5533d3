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

from sciontool_py.harness import record, textblock
from sciontool_py.harness.base import EMPTIED, Edit, Harness, Scope, routed_events, user_home
from sciontool_py.harness.files import read_text, resolve_target
from sciontool_py.harness.tomledit import _parse

FIRED = ("pre_tool", "post_tool", "post_agent")
# The lines install writes inside its block: `[[hooks]]` and `KEY = "..."`.
_SHAPE = re.compile(r'\[\[hooks\]\]|(?:name|type|command) = "(?:[^"\\]|\\.)*"')
NOTE = "Vibe loads a project's .vibe/hooks.toml only in a trusted folder (`vibe --trust` or its prompt)."


class MistralVibe(Harness):
    name = "mistral-vibe"
    dialect = "mistral-vibe"

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
            {"name": f"sciontool-{event}", "type": event, "command": command}
            for event in routed_events(self.dialect, FIRED)
        ]

    def block(self, scope: Scope) -> textblock.Block:
        body: list[str] = []
        for entry in self.entries(scope):
            body.append("[[hooks]]")
            body.extend(f"{key} = {json.dumps(value)}" for key, value in entry.items())
        return textblock.Block(self.name, "", body)

    def install(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = read_text(path)
        text = before or ""
        old = _parse(text, path)
        block = self.block(scope)
        after = textblock.replace_block(text, block, textblock.Where(path, self.name, _SHAPE))
        created: list[tuple[str, ...]] = []
        if after is None:
            after, separator = textblock.append(text, block)
            created = [(textblock.SEPARATOR, separator)]
        elif after == text:
            return [Edit(path, before, before, "already wired", self.notes(scope))]
        mine = {json.dumps(e, sort_keys=True) for e in self.entries(scope)}
        kept = [h for h in _hooks(old) if json.dumps(h, sort_keys=True) not in mine and not _ours(h)]
        self._check(after, path, {**old, "hooks": kept + self.entries(scope)})
        summary = f"added sciontool hooks for {', '.join(e['type'] for e in self.entries(scope))}"
        return [Edit(path, before, after, summary, self.notes(scope), installs=True, created_keys=created)]

    def uninstall(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = read_text(path)
        if before is None:
            return [Edit(path, None, None, "no such file")]
        separator = next((k[1] for k in record.keys(path) if k[:1] == (textblock.SEPARATOR,)), "")
        after = textblock.remove(before, textblock.Where(path, self.name, _SHAPE), separator)
        if after is None:
            return [Edit(path, before, before, "no sciontool hooks")]
        old = _parse(before, path)
        rest = [h for h in _hooks(old) if not _ours(h)]
        expected = {k: v for k, v in old.items() if k != "hooks"}
        if rest or "hooks" in _parse(after, path):
            expected["hooks"] = rest
        self._check(after, path, expected)
        summary = "removed sciontool hooks"
        if not after and record.created(path).get("file"):
            return [Edit(path, before, None, summary + EMPTIED, uninstalls=True)]
        return [Edit(path, before, after, summary, uninstalls=True)]

    def _check(self, text: str, path: str, expected: dict[str, object]) -> None:
        from sciontool_py.errors import SciontoolError

        try:
            got = _parse(text, path)
        except SciontoolError:
            got = None
        if got is None or _sorted(got) != _sorted(expected):  # our block may sit among the user's
            raise SciontoolError(
                f"{path}: cannot add or remove sciontool's [[hooks]] without changing the rest "
                "(is `hooks` an inline array?); left untouched"
            )

    def show(self, scope: Scope) -> str:
        root, relative = self.target(scope)
        lines = "\n".join(self.block(scope).lines())
        note = "".join(f"# {n}\n" for n in self.notes(scope))
        return f"# appended to {os.path.join(root, relative)}\n{lines}\n{note}"


def _hooks(data: dict[str, object]) -> list[object]:
    hooks = data.get("hooks")
    return hooks if isinstance(hooks, list) else []


def _sorted(data: dict[str, object]) -> dict[str, object]:
    return {**data, "hooks": sorted(json.dumps(h, sort_keys=True) for h in _hooks(data))}


def _ours(hook: object) -> bool:
    return isinstance(hook, dict) and str(hook.get("name", "")).startswith("sciontool-")
