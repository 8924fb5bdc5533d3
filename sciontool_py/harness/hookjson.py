"""The `"hooks"` object most harnesses share: event name -> list of entries.

Claude Code, Gemini CLI and Codex group their hooks (`{"matcher": ..., "hooks":
[...]}`); core-agent lists them flat (`{"command": ...}`). Either way an entry
of ours is known by its exact command, so a user's own hooks, even under the
same event and in the same group, are never touched.
"""

from __future__ import annotations

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.jsonedit import Document, Node


class HookSet:
    """The entries to route a harness's events to one command."""

    def __init__(self, command: str, entries: dict[str, dict[str, object]], grouped: bool) -> None:
        self.command = command
        self.entries = entries  # event -> the entry appended to hooks[event]
        self.grouped = grouped

    def is_ours(self, hook: object) -> bool:
        return isinstance(hook, dict) and hook.get("command") == self.command

    def _holds_ours(self, item: object) -> bool:
        if not self.grouped:
            return self.is_ours(item)
        return isinstance(item, dict) and any(self.is_ours(h) for h in _inner(item))

    def add(self, doc: Document) -> list[str]:
        """Add each event's entry unless one of ours is already there; returns the events added."""
        hooks = doc.data.get("hooks")
        if hooks is None:
            doc.add(doc.root, "hooks", {event: [entry] for event, entry in self.entries.items()})
            return list(self.entries)
        if not isinstance(hooks, dict):
            raise SciontoolError(f'{doc.path}: "hooks" is not an object; left untouched')
        added = []
        for event, entry in self.entries.items():
            items = hooks.get(event)
            if items is None:
                doc.add(_node(doc, "hooks"), event, [entry])
            elif not isinstance(items, list):
                raise SciontoolError(f'{doc.path}: "hooks.{event}" is not a list; left untouched')
            elif any(self._holds_ours(item) for item in items):
                continue
            else:
                doc.add(_node(doc, "hooks", event), None, entry)
            added.append(event)
            hooks = doc.data["hooks"]
        return added

    def remove(self, doc: Document) -> list[str]:
        """Remove every hook of ours, then what that left empty; returns the events touched."""
        touched: list[str] = []
        while self._remove_one(doc, touched):
            pass
        hooks = doc.data.get("hooks")
        if touched and hooks == {}:
            doc.remove(doc.root, _index(doc.data, "hooks"))
        return touched

    def _remove_one(self, doc: Document, touched: list[str]) -> bool:
        hooks = doc.data.get("hooks")
        if not isinstance(hooks, dict):
            return False
        for event, items in hooks.items():
            if not isinstance(items, list):
                continue
            if items == [] and event in touched:
                doc.remove(_node(doc, "hooks"), _index(hooks, event))
                return True
            for i, item in enumerate(items):
                if not self._holds_ours(item):
                    continue
                if event not in touched:
                    touched.append(event)
                inner = _inner(item) if self.grouped else []
                mine = [j for j, hook in enumerate(inner) if self.is_ours(hook)]
                if len(mine) < len(inner):  # a group the user shares with us: only our hook goes
                    doc.remove(_node(doc, "hooks", event, i, "hooks"), mine[0])
                else:
                    doc.remove(_node(doc, "hooks", event), i)
                return True
        return False


def _inner(group: dict[str, object]) -> list[object]:
    hooks = group.get("hooks")
    return hooks if isinstance(hooks, list) else []


def _node(doc: Document, *path: str | int) -> Node:
    node = doc.find(*path)
    assert node is not None, path  # the parsed data said it is there
    return node


def _index(mapping: dict[str, object], key: str) -> int:
    return list(mapping).index(key)
