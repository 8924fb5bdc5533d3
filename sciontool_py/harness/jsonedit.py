"""Edit a JSON document in place: add or remove one member, leave every other byte alone.

A settings file is a person's file: re-serialising it would reflow arrays
they keep on one line and reorder nothing but still rewrite every line.
Here the text is scanned once into spans (where each value, key and member
starts and ends); an edit splices new text in or cuts a member out, and the
indentation and line ending of new text follow what is already there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sciontool_py.errors import SciontoolError

_WS = " \t\r\n"


@dataclass
class Node:
    """One JSON value: its text span and, for a container, its members in order."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int  # one past the last character
    # object: (key, member start = the key's opening quote, value); array: ("", value start, value)
    members: list[tuple[str, int, Node]] = field(default_factory=list)

    def get(self, key: str) -> Node | None:
        for name, _, value in self.members:
            if name == key:
                return value
        return None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _WS:
            pos += 1
        return pos

    def value(self, pos: int) -> Node:
        pos = self.skip(pos)
        char = self.text[pos : pos + 1]
        if char == "{":
            return self._container(pos, "object", "}")
        if char == "[":
            return self._container(pos, "array", "]")
        if char == '"':
            return Node("scalar", pos, self._string_end(pos))
        end = pos
        while end < len(self.text) and self.text[end] not in _WS + ",]}":
            end += 1
        return Node("scalar", pos, end)

    def _string_end(self, pos: int) -> int:
        pos += 1
        while True:
            char = self.text[pos]
            if char == "\\":
                pos += 2
            elif char == '"':
                return pos + 1
            else:
                pos += 1

    def _container(self, start: int, kind: str, close: str) -> Node:
        node = Node(kind, start, start)
        pos = self.skip(start + 1)
        if self.text[pos] == close:
            node.end = pos + 1
            return node
        while True:
            pos = self.skip(pos)
            key, member_start = "", pos
            if kind == "object":
                key_end = self._string_end(pos)
                key = json.loads(self.text[pos:key_end])
                pos = self.skip(key_end) + 1  # past the colon
            value = self.value(pos)
            node.members.append((key, member_start, value))
            pos = self.skip(value.end)
            if self.text[pos] == close:
                node.end = pos + 1
                return node
            pos += 1  # past the comma


class Document:
    """A JSON file's text, its parsed value and its spans, kept in step by every edit.

    With comments=True the text may hold `//` and `/* */` comments (JSONC, as Gemini CLI
    reads its settings): they are read as whitespace and kept where they are.
    """

    def __init__(self, text: str, path: str, comments: bool = False) -> None:
        self.path = path
        self.comments = comments
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self._set(text)
        if not isinstance(self.data, dict):
            raise SciontoolError(f"{path}: not a JSON object; left untouched")
        self.unit = _indent_unit(text)

    def _set(self, text: str) -> None:
        plain = blank_comments(text) if self.comments else text
        try:
            self.data = json.loads(plain, object_pairs_hook=self._unique, parse_constant=_constant)
            self.root = _Scanner(plain).value(0)
        except ValueError as exc:
            raise SciontoolError(f"{self.path}: cannot parse: {exc}; left untouched") from None
        except RecursionError:
            raise SciontoolError(f"{self.path}: nested too deeply to edit; left untouched") from None
        self.text = text

    def _unique(self, pairs: list[tuple[str, object]]) -> dict[str, object]:
        # With a key twice, readers disagree on which copy counts (json: the last); an edit
        # of one copy could be dead. Refuse rather than guess.
        data = dict(pairs)
        if len(data) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise SciontoolError(
                        f"{self.path}: the key {json.dumps(key)} appears twice in one object; "
                        "remove one copy, then run again (left untouched)"
                    )
                seen.add(key)
        return data

    def find(self, *path: str | int) -> Node | None:
        node: Node | None = self.root
        for step in path:
            if node is None:
                return None
            if isinstance(step, int):
                node = node.members[step][2] if node.kind == "array" and step < len(node.members) else None
            else:
                node = node.get(step) if node.kind == "object" else None
        return node

    def add(self, container: Node, key: str | None, value: object) -> None:
        """Append a member (key: value to an object, value to an array) after the last one."""
        member = json.dumps(value, ensure_ascii=False)
        if key is not None:
            member = f"{json.dumps(key, ensure_ascii=False)}: {member}"
        text = self.text
        if container.members:
            first, last = container.members[0], container.members[-1]
            gap = text[container.start + 1 : first[1]]
            if "\n" not in gap:  # a one-line container stays on one line
                self._splice(last[2].end, last[2].end, ", " + member)
                return
            indent = gap.rsplit("\n", 1)[1]
            rendered = self._render(value, key, indent)
            self._splice(last[2].end, last[2].end, "," + self.newline + indent + rendered)
            return
        outer = _line_indent(text, container.start)
        indent = outer + self.unit
        rendered = self._render(value, key, indent)
        body = self.newline + indent + rendered + self.newline + outer
        self._splice(container.start + 1, container.end - 1, body)

    def remove(self, container: Node, index: int) -> None:
        """Cut member index out with the comma and line that held it."""
        members = container.members
        if len(members) == 1:
            self._splice(container.start + 1, container.end - 1, "")
        elif index > 0:
            self._splice(members[index - 1][2].end, members[index][2].end, "")
        else:
            self._splice(members[0][1], members[1][1], "")

    def _render(self, value: object, key: str | None, indent: str) -> str:
        body = json.dumps(value, indent=self.unit, ensure_ascii=False)
        if key is not None:
            body = f"{json.dumps(key, ensure_ascii=False)}: {body}"
        return body.replace("\n", self.newline + indent)

    def _splice(self, start: int, end: int, new: str) -> None:
        self._set(self.text[:start] + new + self.text[end:])


def _constant(name: str) -> object:
    # Python's json reads NaN and Infinity; JavaScript's JSON.parse and Rust's serde_json, which
    # the harnesses read their settings with, refuse the file: so does install.
    raise ValueError(f"{name} is not JSON (the harness would refuse the file)")


def blank_comments(text: str) -> str:
    """text with each comment's characters turned into spaces (line ends kept), so every
    offset stays where it was; strings are left alone."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] not in "\r\n":
                out[i] = " "
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                if text[j] not in "\r\n":
                    out[j] = " "
            i = end
        else:
            i += 1
    return "".join(out)


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_unit(text: str) -> str:
    """The file's indent step: the first indented line's leading whitespace (two spaces by default)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            return line[: len(line) - len(stripped)]
    return "  "
