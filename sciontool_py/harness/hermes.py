"""Hermes Agent (0.19.0 tried): shell hooks under `hooks:` in `~/.hermes/config.yaml`.

Hermes reads hooks from its one config file (`$HERMES_HOME/config.yaml`, default
`~/.hermes/`): `hooks: {EVENT: [{command: ...}]}`, each command split like a
shell line but run without a shell, the payload JSON on stdin. It asks the user
once per (event, command) before running a hook; a run without a terminal needs
`--accept-hooks`, `HERMES_ACCEPT_HOOKS=1` or `hooks_auto_accept: true`.
"""

from __future__ import annotations

import json
import os
import re

from sciontool_py.errors import SciontoolError
from sciontool_py.harness import record, textblock
from sciontool_py.harness.base import EMPTIED, Edit, Harness, Scope, routed_events, user_home
from sciontool_py.harness.files import read_text, resolve_target

# The Hermes 0.19.0 hook events the hermes dialect may map, in the order of a session.
FIRED = (
    "on_session_start",
    "pre_llm_call",
    "pre_api_request",
    "post_api_request",
    "api_request_error",
    "pre_tool_call",
    "pre_approval_request",
    "post_tool_call",
    "post_llm_call",
    "subagent_start",
    "subagent_stop",
    "on_session_end",
    "on_session_reset",
    "on_session_finalize",
)
NOTE = (
    "Hermes asks once per hook before running it; for a run without a terminal pass "
    "--accept-hooks, set HERMES_ACCEPT_HOOKS=1 or `hooks_auto_accept: true` in config.yaml."
)
# A top-level `hooks:` line, and its value when that is an empty one install must rewrite.
_HOOKS = re.compile(r"hooks[ \t]*:(?P<value>[^#\r\n]*)(?P<comment>#.*)?$")
_EMPTY = ("{}", "~", "null", "")


class Hermes(Harness):
    name = "hermes"
    dialect = "hermes"

    def target(self, scope: Scope) -> tuple[str, str]:
        if scope.project is not None:
            raise SciontoolError("hermes reads hooks only from ~/.hermes/config.yaml: use --user")
        home = os.environ.get("HERMES_HOME")
        return (home, "config.yaml") if home else (user_home(), os.path.join(".hermes", "config.yaml"))

    def commands(self, scope: Scope) -> dict[str, str]:
        return {e: scope.hook_command(self.dialect) for e in routed_events(self.dialect, FIRED)}

    def body(self, scope: Scope, indent: str) -> list[str]:
        lines: list[str] = []
        for event, command in self.commands(scope).items():
            lines += [f"{indent}{event}:", f"{indent}  - command: {json.dumps(command)}"]
        return lines

    def install(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = read_text(path)
        text = before or ""
        old = _load(text, path)
        ours = {e: [{"command": c}] for e, c in self.commands(scope).items()}
        created: list[tuple[str, ...]] = []
        lines = textblock.split(text)
        where = textblock.find(lines, self.name)
        if where is not None:
            first = lines[where[0]]
            indent = first[: len(first) - len(first.lstrip())]
            whole = where[0] + 1 < len(lines) and lines[where[0] + 1].rstrip() == "hooks:"
            block = self._whole(scope) if whole else self._block(scope, indent)
            after = textblock.replace_block(text, block) or text  # found above: never None
            old = _load(textblock.remove(text, self.name) or "", path) if after != text else old
        else:
            after, created = self._insert(text, lines, scope, path)
        if after == text:
            return [Edit(path, before, before, "already wired", [NOTE])]
        hooks = old.get("hooks") or {}
        if not isinstance(hooks, dict):
            raise SciontoolError(f"{path}: hooks is not a mapping; left untouched")
        _check(after, path, {**old, "hooks": {**hooks, **ours}})
        summary = f"added sciontool hooks for {', '.join(ours)}"
        return [Edit(path, before, after, summary, [NOTE], installs=True, created_keys=created)]

    def _block(self, scope: Scope, indent: str) -> textblock.Block:
        return textblock.Block(self.name, indent, self.body(scope, indent))

    def _whole(self, scope: Scope) -> textblock.Block:
        """The block that is the file's whole `hooks:` key."""
        return textblock.Block(self.name, "", ["hooks:", *self.body(scope, "  ")])

    def _insert(
        self, text: str, lines: list[str], scope: Scope, path: str
    ) -> tuple[str, list[tuple[str, ...]]]:
        """Our block in a file without it: under the user's `hooks:`, or a new `hooks:` at the end."""
        at = next((i for i, line in enumerate(lines) if _HOOKS.match(line.rstrip("\r\n"))), None)
        if at is None:
            after, separator = textblock.append(text, self._whole(scope))
            return after, [("hooks",), (textblock.SEPARATOR, separator)]
        line = lines[at].rstrip("\r\n")
        match = _HOOKS.match(line)
        assert match is not None
        value = match.group("value").strip()
        created: list[tuple[str, ...]] = []
        head = lines[: at + 1]
        if value:
            if value not in _EMPTY or match.group("comment"):
                raise SciontoolError(f"{path}: hooks is not a block mapping; add sciontool's by hand")
            head = [*lines[:at], "hooks:" + lines[at][len(line) :]]
            created.append((textblock.REPLACED, line))
        newline = textblock.newline_of(text)
        if not head[-1].endswith(("\n", "\r")):
            head[-1] += newline
            created.append((textblock.SEPARATOR, newline))
        block = self._block(scope, _child_indent(lines[at + 1 :]))
        return "".join(head + textblock.render(block, newline) + lines[at + 1 :]), created

    def uninstall(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = read_text(path)
        if before is None:
            return [Edit(path, None, None, "no such file")]
        keys = record.keys(path)
        separator = next((k[1] for k in keys if k[:1] == (textblock.SEPARATOR,)), "")
        replaced = next((k[1] for k in keys if k[:1] == (textblock.REPLACED,)), None)
        after = textblock.remove(before, self.name, separator, replaced)
        if after is None:
            return [Edit(path, before, before, "no sciontool hooks")]
        old = _load(before, path)
        hooks = old.get("hooks")
        rest = {e: v for e, v in hooks.items() if not _ours(v)} if isinstance(hooks, dict) else {}
        expected = {k: v for k, v in old.items() if k != "hooks"}
        if ("hooks",) not in keys:
            empty: dict[str, object] | None = {} if replaced is not None and "{}" in replaced else None
            expected["hooks"] = rest or empty
        _check(after, path, expected)
        summary = "removed sciontool hooks"
        if not after and record.created(path).get("file"):
            return [Edit(path, before, None, summary + EMPTIED, uninstalls=True)]
        return [Edit(path, before, after, summary, uninstalls=True)]

    def show(self, scope: Scope) -> str:
        root, relative = self.target(scope)
        lines = "\n".join(["hooks:", *self.body(scope, "  ")])
        return f"# merged into {os.path.join(root, relative)}\n{lines}\n# {NOTE}\n"


def _ours(entries: object) -> bool:
    return (
        isinstance(entries, list)
        and bool(entries)
        and all(
            isinstance(e, dict) and str(e.get("command", "")).endswith(" hook --dialect=hermes")
            for e in entries
        )
    )


def _child_indent(rest: list[str]) -> str:
    """The indentation of the user's first entry under `hooks:` (two spaces when none)."""
    for line in rest:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = line[: len(line) - len(line.lstrip())]
        return indent if indent else "  "
    return "  "


def _load(text: str, path: str) -> dict[str, object]:
    import yaml

    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise SciontoolError(f"{path}: cannot parse YAML{where}; left untouched") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SciontoolError(f"{path}: not a mapping; left untouched")
    return data


def _check(text: str, path: str, expected: dict[str, object]) -> None:
    """The edited text must parse to exactly the expected settings, or nothing is written."""
    try:
        got = _load(text, path)
    except SciontoolError:
        got = None
    if got != expected:
        raise SciontoolError(
            f"{path}: cannot change the hooks without changing the rest (an event of ours the user "
            "wired too?); left untouched: `sciontool harness show hermes` prints what to add"
        )
