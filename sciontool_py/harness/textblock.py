"""Our hooks as one marked block of lines in a TOML or YAML file, so uninstall gives back every byte.

No TOML or YAML writer keeps a file's comments and layout, so install writes
its entries as a block of lines between two comment lines that name it, and
uninstall removes exactly that block. What install changed outside the block
(a blank line before it, the user's `hooks: {}` it replaced) is remembered in
the install record as a key, and put back. The caller parses the result again
and refuses the edit unless it holds exactly the old settings plus ours.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def find(lines: list[str], name: str) -> tuple[int, int] | None:
    """(first, last) line index of our block, markers included, or None."""
    begin, end = BEGIN.format(name=name), END.format(name=name)
    start = next((i for i, line in enumerate(lines) if line.strip() == begin), None)
    if start is None:
        return None
    stop = next((i for i in range(start + 1, len(lines)) if lines[i].strip() == end), None)
    return None if stop is None else (start, stop)


def render(block: Block, newline: str) -> list[str]:
    return [line + newline for line in block.lines()]


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def replace_block(text: str, block: Block) -> str | None:
    """The text with our block (there already) replaced by this one; None when there is none."""
    lines = split(text)
    where = find(lines, block.name)
    if where is None:
        return None
    start, stop = where
    ending = lines[stop][len(lines[stop].rstrip("\r\n")) :]
    new = render(block, newline_of(text))
    if not ending:  # the block ended the file without a line end: keep it so
        new[-1] = new[-1].rstrip("\r\n")
    return "".join(lines[:start] + new + lines[stop + 1 :])


def append(text: str, block: Block) -> tuple[str, str]:
    """The text with the block at its end, and what was put before it (to take away again)."""
    newline = newline_of(text)
    if not text or text == newline or text.endswith(newline + newline):
        separator = ""
    elif text.endswith(newline):
        separator = newline
    else:
        separator = newline + newline
    return text + separator + "".join(render(block, newline)), separator


def remove(text: str, name: str, separator: str = "", replaced: str | None = None) -> str | None:
    """The text without our block (and the separator or the line it replaced); None if absent."""
    lines = split(text)
    where = find(lines, name)
    if where is None:
        return None
    start, stop = where
    head, tail = "".join(lines[:start]), "".join(lines[stop + 1 :])
    if replaced is not None and start > 0:  # the block followed the line it rewrote: restore it
        ending = lines[start - 1][len(lines[start - 1].rstrip("\r\n")) :]
        head = "".join([*lines[: start - 1], replaced + ending])
    if not tail and separator and head.endswith(separator):
        head = head[: -len(separator)]
    return head + tail
