"""Our hooks as one marked block of lines in a YAML file, so uninstall gives back every byte.

Hermes's config.yaml: no YAML writer keeps a file's comments and layout, so install writes
its entries as a block of lines between two comment lines that name it, and
uninstall removes exactly that block. What install changed outside the block
(a blank line before it, the user's `hooks: {}` it replaced) is remembered in
the install record as a key, and put back. The caller parses the result again
and refuses the edit unless it holds exactly the old settings plus ours. (Vibe's
hooks.toml had such a block before its tables went in with tomlkit: uninstall
and reinstall still remove one.)

A block is ours only when it is whole: one begin line, one end line after it,
and between them only lines of the shapes install writes. Anything else (an end
line deleted by hand, a marker's text inside a multi-line string, a user's line
inside the block) is refused, install and uninstall alike: removing it could
cost the user's lines, and writing beside it would leave a file no later
uninstall could tell apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sciontool_py.errors import SciontoolError

BEGIN = "# >>> sciontool harness install {name}: Scion's status hooks (uninstall removes this block)"
END = "# <<< sciontool harness install {name}"
SEPARATOR = "#separator"  # record key: (SEPARATOR, text install put before an appended block)
REPLACED = "#replaced"  # record key: (REPLACED, the line the block replaced)


@dataclass(frozen=True)
class Block:
    name: str  # the harness
    indent: str  # the block's indentation (its marker lines share it)
    body: list[str]  # the entries' lines, already indented, without line ends

    def lines(self) -> list[str]:
        return [
            self.indent + BEGIN.format(name=self.name),
            *self.body,
            self.indent + END.format(name=self.name),
        ]


def split(text: str) -> list[str]:
    """The text's lines with their ends (the last may have none)."""
    return text.splitlines(keepends=True)


@dataclass(frozen=True)
class Where:
    """Which file, which block, and the shape of each line install writes in it."""

    path: str
    name: str  # the block's name: the harness, or the harness and an event
    shape: re.Pattern[str]  # a body line install writes, without its line end

    def damaged(self, problem: str, line: int) -> SciontoolError:
        harness = self.name.split(" ")[0]
        return SciontoolError(
            f"{self.path}: sciontool's marked block cannot be told apart safely ({problem}, line "
            f"{line + 1}); restore it or remove it by hand (`sciontool harness show {harness}` prints "
            "it), then run again; left untouched"
        )


def find(lines: list[str], where: Where) -> tuple[int, int] | None:
    """(first, last) line index of our whole block, markers included; None when the file has no
    line of it. SciontoolError when it is not whole (see the module's docstring)."""
    begin, end = BEGIN.format(name=where.name), END.format(name=where.name)
    starts = [i for i, line in enumerate(lines) if line.strip() == begin]
    stops = [i for i, line in enumerate(lines) if line.strip() == end]
    if not starts and not stops:
        return None
    if len(starts) > 1:
        raise where.damaged("a second begin line", starts[1])
    if len(stops) > 1:
        raise where.damaged("a second end line", stops[1])
    if not stops:
        raise where.damaged("a begin line without its end line", starts[0])
    if not starts or stops[0] < starts[0]:
        raise where.damaged("an end line without its begin line", stops[0])
    start, stop = starts[0], stops[0]
    for i in range(start + 1, stop):
        if not where.shape.fullmatch(lines[i].rstrip("\r\n")):
            raise where.damaged("a line install did not write inside it", i)
    return start, stop


def render(block: Block, newline: str) -> list[str]:
    return [line + newline for line in block.lines()]


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def replace_block(text: str, block: Block, where: Where) -> str | None:
    """The text with our block (there already) replaced by this one; None when there is none."""
    lines = split(text)
    found = find(lines, where)
    if found is None:
        return None
    start, stop = found
    ending = lines[stop][len(lines[stop].rstrip("\r\n")) :]
    new = render(block, newline_of(text))
    if not ending:  # the block ended the file without a line end: keep it so
        new[-1] = new[-1].rstrip("\r\n")
    return "".join(lines[:start] + new + lines[stop + 1 :])


def separator_for(text: str) -> str:
    """What goes between text and lines added at its end: a blank line, but no second one."""
    newline = newline_of(text)
    if not text or text == newline or text.endswith(newline + newline):
        return ""
    return newline if text.endswith(newline) else newline + newline


def append(text: str, block: Block) -> tuple[str, str]:
    """The text with the block at its end, and what was put before it (to take away again)."""
    separator = separator_for(text)
    return text + separator + "".join(render(block, newline_of(text))), separator


def remove(text: str, where: Where, separator: str = "", replaced: str | None = None) -> str | None:
    """The text without our block (and the separator or the line it replaced); None if absent."""
    lines = split(text)
    found = find(lines, where)
    if found is None:
        return None
    start, stop = found
    head, tail = "".join(lines[:start]), "".join(lines[stop + 1 :])
    if replaced is not None and start > 0:  # the block followed the line it rewrote: restore it
        ending = lines[start - 1][len(lines[start - 1].rstrip("\r\n")) :]
        head = "".join([*lines[: start - 1], replaced + ending])
    if not tail and separator and head.endswith(separator):
        head = head[: -len(separator)]
    return head + tail
