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
from sciontool_py.harness.base import Edit, Scope, TextHarness, routed_events, user_home
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
# More values than a settings file (256 KiB at most) holds without aliases, about one a byte at
# most: only aliases reach it.
_MAX_VALUES = 1_000_000
# The lines install writes inside its blocks: `EVENT:` and `- command: "..."`, indented.
_SHAPE = re.compile(r'[ \t]*(?:[a-z_]+:|- command: "(?:[^"\\]|\\.)*")')


class Hermes(TextHarness):
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
        return [line for event in self.commands(scope) for line in self._entry_lines(scope, event, indent)]

    def install(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = read_text(path)
        text = before or ""
        pristine, old = self._unwired(text, path)  # a reinstall starts again from the user's own file
        hooks = old.get("hooks") or {}
        if not isinstance(hooks, dict):
            raise SciontoolError(f"{path}: hooks is not a mapping; left untouched")
        after, created = self._insert(pristine, scope, path, hooks)
        if after == text:
            return [Edit(path, before, before, "already wired", [NOTE])]
        ours = self.commands(scope)
        merged = {e: [{"command": ours[e]}, *(hooks.get(e) or [])] for e in ours}
        _check(after, path, {**old, "hooks": {**hooks, **merged}})
        summary = f"added sciontool hooks for {', '.join(ours)}"
        return [Edit(path, before, after, summary, [NOTE], installs=True, created_keys=created)]

    def _whole(self, scope: Scope) -> textblock.Block:
        """The block that is the file's whole `hooks:` key."""
        return textblock.Block(self.name, "", ["hooks:", *self.body(scope, "  ")])

    def _insert(
        self, text: str, scope: Scope, path: str, hooks: dict[str, object]
    ) -> tuple[str, list[tuple[str, ...]]]:
        """Our blocks in a file without them: under the user's `hooks:` (our entry first in an
        event's list the user has), or a new `hooks:` at the end."""
        lines = textblock.split(text)
        at = next((i for i, line in enumerate(lines) if _HOOKS.match(line.rstrip("\r\n"))), None)
        if at is None:
            after, separator = textblock.append(text, self._whole(scope))
            return after, [("hooks",), (textblock.SEPARATOR, separator)]
        line = lines[at].rstrip("\r\n")
        match = _HOOKS.match(line)
        assert match is not None
        value = match.group("value").strip()
        created: list[tuple[str, ...]] = []
        newline = textblock.newline_of(text)
        shared = [e for e in self.commands(scope) if e in hooks]
        for event in reversed(sorted(shared, key=lambda e: _key_line(lines, at, e, path))):
            lines = self._join_list(lines, _key_line(lines, at, event, path), event, scope, path, newline)
        head = lines[: at + 1]
        if value:
            if value not in _EMPTY or match.group("comment"):
                raise SciontoolError(f"{path}: hooks is not a block mapping; add sciontool's by hand")
            head = [*lines[:at], "hooks:" + lines[at][len(line) :]]
            created.append((textblock.REPLACED, line))
        if not head[-1].endswith(("\n", "\r")):
            head[-1] += newline
            created.append((textblock.SEPARATOR, newline))
        own = [e for e in self.commands(scope) if e not in shared]
        block = textblock.Block(self.name, "", [])
        if own:
            indent = _child_indent(lines[at + 1 :])
            body = [b for e in own for b in self._entry_lines(scope, e, indent)]
            block = textblock.Block(self.name, indent, body)
        rendered = textblock.render(block, newline) if own else []
        return "".join(head + rendered + lines[at + 1 :]), created

    def _entry_lines(self, scope: Scope, event: str, indent: str) -> list[str]:
        return [f"{indent}{event}:", f"{indent}  - command: {json.dumps(self.commands(scope)[event])}"]

    def _join_list(
        self, lines: list[str], key: int, event: str, scope: Scope, path: str, newline: str
    ) -> list[str]:
        """Our entry as the first item of the user's own list for this event (a block sequence)."""
        item = next((x for x in lines[key + 1 :] if x.strip() and not x.strip().startswith("#")), "")
        if not item.lstrip().startswith("- ") or not lines[key].rstrip("\r\n").rstrip().endswith(":"):
            raise SciontoolError(
                f"{path}: hooks.{event} is not a list of `- ` items; add sciontool's to it by hand "
                "(`sciontool harness show hermes` prints it)"
            )
        indent = item[: len(item) - len(item.lstrip())]
        command = json.dumps(self.commands(scope)[event])
        block = textblock.Block(f"{self.name} {event}", indent, [f"{indent}- command: {command}"])
        return [*lines[: key + 1], *textblock.render(block, newline), *lines[key + 1 :]]

    def _strip(self, text: str, path: str) -> str:
        """The text without any block of ours (and what they replaced put back)."""
        keys = record.keys(path)
        separator = next((k[1] for k in keys if k[:1] == (textblock.SEPARATOR,)), "")
        replaced = next((k[1] for k in keys if k[:1] == (textblock.REPLACED,)), None)
        for event in FIRED:
            where = textblock.Where(path, f"{self.name} {event}", _SHAPE)
            text = _or(textblock.remove(text, where), text)
        where = textblock.Where(path, self.name, _SHAPE)
        return _or(textblock.remove(text, where, separator, replaced), text)

    def _unwired(self, text: str, path: str) -> tuple[str, dict[str, object]]:
        """The text without our blocks and its settings, which must be exactly those of text but
        ours, or nothing is written: what a block held must have been only our entries."""
        old = _load(text, path)
        after = self._strip(text, path)
        if after == text:
            return text, old
        keys = record.keys(path)
        replaced = next((k[1] for k in keys if k[:1] == (textblock.REPLACED,)), None)
        hooks = old.get("hooks")
        rest: dict[str, object] = {}
        for event, entries in hooks.items() if isinstance(hooks, dict) else ():
            mine = isinstance(entries, list) and [e for e in entries if not _our_entry(e)]
            if not (isinstance(entries, list) and entries and not mine):  # only ours: the key goes too
                rest[event] = mine if isinstance(entries, list) else entries
        expected = {k: v for k, v in old.items() if k != "hooks"}
        if ("hooks",) not in keys:
            empty: dict[str, object] | None = {} if replaced is not None and "{}" in replaced else None
            expected["hooks"] = rest or empty
        _check(after, path, expected)
        return after, expected

    def show(self, scope: Scope) -> str:
        root, relative = self.target(scope)
        lines = "\n".join(["hooks:", *self.body(scope, "  ")])
        return f"# merged into {os.path.join(root, relative)}\n{lines}\n# {NOTE}\n"


def _or(stripped: str | None, text: str) -> str:
    """The text a block was removed from, or the text as it was (no such block)."""
    return text if stripped is None else stripped


def _our_entry(entry: object) -> bool:
    return isinstance(entry, dict) and str(entry.get("command", "")).endswith(" hook --dialect=hermes")


def _key_line(lines: list[str], hooks_at: int, event: str, path: str) -> int:
    """The line of `EVENT:` inside the top-level `hooks:` mapping."""
    key = re.compile(rf"[ \t]+{re.escape(event)}[ \t]*:")
    for i in range(hooks_at + 1, len(lines)):
        line = lines[i]
        if line.strip() and not line[0].isspace() and not line.lstrip().startswith("#"):
            break  # the next top-level key: the hooks mapping ended
        if key.match(line):
            return i
    raise SciontoolError(f"{path}: cannot find hooks.{event} in the file; add sciontool's by hand")


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
    """The file's settings. libyaml parses (PyYAML's pure-Python parser took 16 s of CPU for
    10 MB); aliases are expanded only after their expansion is counted (a 584-byte alias bomb
    makes 10^8 values, which every later comparison would walk). Then the text must also pass
    PyYAML's own parser, which Hermes reads it with (`yaml.safe_load`): libyaml takes a tab
    where that parser stops (`model: a<TAB>b`), and Hermes would then read no config at all."""
    import yaml

    # libyaml is in PyYAML's wheels; a build without it parses in Python, slower but the same.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is not None and "*" in text:  # no alias without its `*`
            _bounded(node, path)
        data = loader.construct_document(node) if node is not None else None
        _parsed_as_hermes_does(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        said = ": ".join(part for part in (where, problem) if part)
        raise SciontoolError(
            f"{path}: cannot parse YAML{f' ({said})' if said else ''}; left untouched"
        ) from None
    except RecursionError:
        raise SciontoolError(f"{path}: nested too deeply to edit; left untouched") from None
    finally:
        loader.dispose()
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SciontoolError(f"{path}: not a mapping; left untouched")
    return data


def _parsed_as_hermes_does(text: str) -> None:
    """Run PyYAML's pure-Python parser over text (its events, no values built: 0.55 s of CPU for
    256 KiB here, a settings file's few KiB in milliseconds); YAMLError where it stops."""
    import yaml

    for _ in yaml.parse(text, Loader=yaml.SafeLoader):
        pass


def _bounded(root: object, path: str) -> None:
    """Refuse a document whose values, aliases expanded, outnumber _MAX_VALUES. Each node is
    counted once (an alias shares its anchor's node), without recursion."""
    import yaml

    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)] if isinstance(root, yaml.Node) else []
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        value = node.value if isinstance(node, yaml.CollectionNode) else []
        children = [n for pair in value for n in pair] if isinstance(node, yaml.MappingNode) else value
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
        if sizes[id(node)] > _MAX_VALUES:
            raise SciontoolError(
                f"{path}: its YAML aliases expand to more than {_MAX_VALUES:,} values (an alias bomb?): "
                "not edited (left untouched)"
            )


def _check(text: str, path: str, expected: dict[str, object]) -> None:
    """The edited text must parse to exactly the expected settings, or nothing is written."""
    try:
        got = _load(text, path)
    except SciontoolError:
        got = None
    try:
        differs = got != expected
    except RecursionError:  # libyaml nests up to 1,000 levels; comparing them goes past Python's limit
        raise SciontoolError(f"{path}: nested too deeply to edit; left untouched") from None
    if differs:
        raise SciontoolError(
            f"{path}: cannot change the hooks without changing the rest (an event of ours the user "
            "wired too?); left untouched: `sciontool harness show hermes` prints what to add"
        )
