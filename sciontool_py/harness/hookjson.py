"""The `"hooks"` object most harnesses share: event name -> list of entries.

Claude Code, Gemini CLI and Codex group their hooks (`{"matcher": ..., "hooks":
[...]}`); core-agent and Copilot CLI list them flat (`{"command": ...}`);
Antigravity mixes both. An entry of ours is known by its command: the exact
one install writes, or the same `hook ...` arguments after another program
(an earlier `--command`), so a reinstall replaces ours and a user's own hooks,
even under the same event and in the same group, are never touched.

Install reports which keys it created (`hooks`, `hooks.Stop`, ...); uninstall
removes such a key only when install created it and nothing is left in it, so
a user's own empty `"Stop": []` or `"hooks": {}` stays.
"""

from __future__ import annotations

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.jsonedit import Document, Node

KeyPath = tuple[str, ...]


class HookSet:
    """The entries that route a harness's events to sciontool."""

    def __init__(
        self,
        entries: dict[str, dict[str, object]],
        commands: dict[str, str],
        key: str = "command",
        root: str = "hooks",
    ) -> None:
        self.entries = entries  # event -> the entry appended to root[event]
        self.commands = commands  # event -> the command line in that entry
        self.key = key  # the member holding the command line ("bash" for Copilot)
        self.root = root

    def merge(self, other: HookSet) -> None:
        """Take OTHER's events in too (uninstall removes both)."""
        self.entries.update(other.entries)
        self.commands.update(other.commands)

    def is_ours(self, hook: object, event: str) -> bool:
        """A hook whose command is ours for this event, whatever program ran sciontool."""
        if not isinstance(hook, dict):
            return False
        command = hook.get(self.key)
        if not isinstance(command, str):
            return False
        ours = self.commands[event]
        # " hook --dialect=NAME ...": every line install writes, or wrote, ends with the program
        # and these (a project's line, or one that reads the relay into bash, names them twice)
        arguments = ours[ours.rfind(" hook ") :]
        return command == ours or (command.endswith(arguments) and command[: -len(arguments)].strip() != "")

    def _holds_ours(self, item: object, event: str) -> bool:
        return self.is_ours(item, event) or (
            isinstance(item, dict) and any(self.is_ours(h, event) for h in _inner(item))
        )

    def add(self, doc: Document) -> tuple[list[str], list[KeyPath]]:
        """Add each event's entry, replacing one of ours that differs; returns the events
        changed and the keys created."""
        hooks = doc.data.get(self.root)
        if hooks is None:
            doc.add(doc.root, self.root, {event: [entry] for event, entry in self.entries.items()})
            return list(self.entries), [(self.root,), *((self.root, event) for event in self.entries)]
        if not isinstance(hooks, dict):
            raise SciontoolError(f'{doc.path}: "{self.root}" is not an object; left untouched')
        changed: list[str] = []
        created: list[KeyPath] = []
        for event, entry in self.entries.items():
            items = hooks.get(event)
            if items is None:
                doc.add(_node(doc, self.root), event, [entry])
                created.append((self.root, event))
            elif not isinstance(items, list):
                raise SciontoolError(f'{doc.path}: "{self.root}.{event}" is not a list; left untouched')
            elif entry in items:
                continue
            else:
                while self._remove_one(doc, event):  # ours from another --command, or older
                    pass
                doc.add(_node(doc, self.root, event), None, entry)
            changed.append(event)
            hooks = doc.data[self.root]
        return changed, created

    def remove(self, doc: Document, created: list[KeyPath]) -> list[str]:
        """Remove every hook of ours, then each key install created that is left empty;
        returns the events touched."""
        hooks = doc.data.get(self.root)
        if not isinstance(hooks, dict):
            return []
        touched = [event for event in self.entries if event in hooks and self._remove_all(doc, event)]
        for path in sorted(created, key=len, reverse=True):
            parent = doc.find(*path[:-1])
            value = doc.find(*path)
            if parent is not None and value is not None and value.kind != "scalar" and not value.members:
                doc.remove(parent, [name for name, _, _ in parent.members].index(path[-1]))
        return touched

    def _remove_all(self, doc: Document, event: str) -> bool:
        removed = False
        while self._remove_one(doc, event):
            removed = True
        return removed

    def _remove_one(self, doc: Document, event: str) -> bool:
        items = doc.data[self.root].get(event)
        if not isinstance(items, list):
            return False
        for i, item in enumerate(items):
            if not self._holds_ours(item, event):
                continue
            inner = [] if self.is_ours(item, event) else _inner(item)
            mine = [j for j, hook in enumerate(inner) if self.is_ours(hook, event)]
            if len(mine) < len(inner):  # a group the user shares with us: only our hook goes
                doc.remove(_node(doc, self.root, event, i, "hooks"), mine[0])
            else:
                doc.remove(_node(doc, self.root, event), i)
            return True
        return False


def _inner(group: dict[str, object]) -> list[object]:
    hooks = group.get("hooks")
    return hooks if isinstance(hooks, list) else []


def _node(doc: Document, *path: str | int) -> Node:
    node = doc.find(*path)
    assert node is not None, path  # the parsed data said it is there
    return node
