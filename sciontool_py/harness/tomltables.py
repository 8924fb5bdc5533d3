"""Our tables in a TOML array of tables (`[[hooks]]`): added with tomlkit, taken away as lines.

tomlkit parses a file and writes it back byte for byte, comments and spacing
included, except one whose array of tables is split by another table (it
writes that table after the array): such a file is refused. Its edits may
touch bytes beside them (a new table gets a blank line before it, a CRLF file
LF lines, a last line without its end one), so our tables go in as text we
render, with the file's line ends: after the user's last table of the array,
or at the end of a file without one; what install had to put before them (a
line end, a blank line) is remembered as a separator. The caller checks that
`remove` undoes an `add` exactly before anything is written.

Removal is by lines, not tomlkit's: tomlkit counts the comments and blank
lines below a table as the table's, so deleting our last table took the user's
comments under it with it. Here a table of ours loses its header and its
key lines; every comment and blank line in it stays where it was. The caller
parses the result again: it must hold the old settings less ours.
"""

from __future__ import annotations

import re
import sys

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.textblock import newline_of, separator_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from tomlkit.items import AoT
    from tomlkit.toml_document import TOMLDocument


def _document(text: str, path: str) -> TOMLDocument:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise SciontoolError(f"{path}: cannot parse: {exc}; left untouched") from None
    except RecursionError:
        raise SciontoolError(f"{path}: nested too deeply to edit; left untouched") from None
    if doc.as_string() != text:
        raise SciontoolError(
            f"{path}: tomlkit would not write it back as it is (an array of tables split by another "
            "table?): add or remove sciontool's [[hooks]] by hand; left untouched"
        )
    return doc


def _array(doc: TOMLDocument, key: str, path: str) -> AoT | None:
    from tomlkit.items import AoT

    found = doc.get(key)
    if found is None or isinstance(found, AoT):
        return found
    raise SciontoolError(
        f"{path}: `{key}` is not an array of tables ([[{key}]], an inline array?): add sciontool's "
        "by hand; left untouched"
    )


def add(text: str, key: str, tables: str, path: str) -> tuple[str, str]:
    """text with tables (`[[key]]` tables as TOML text, in the file's line ends) added to the
    array, and the separator put before them."""
    doc = _document(text, path)
    array = _array(doc, key, path)
    if array is None:  # no such array: ours starts one at the end of the file
        separator = separator_for(text)
        return text + separator + tables, separator
    separator = ""
    if not text.endswith(("\n", "\r")):  # the user's last table ends the file without a line end
        separator = newline_of(text)
        doc = _document(text + separator, path)
        array = _array(doc, key, path)
        assert array is not None
    for table in _array(_document(tables, path), key, path) or []:
        array.append(table)
    return doc.as_string(), separator


def remove(text: str, key: str, ours: Callable[[object], bool], separator: str, path: str) -> str:
    """text without the array's tables that are ours: each one's header and key lines (its
    comments and blank lines stay), and the separator install put before them when they ended
    the file."""
    header = re.compile(rf"[ \t]*\[\[[ \t]*{re.escape(key)}[ \t]*\]\][ \t]*(?P<comment>#.*)?")
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    while at < len(lines):
        found = header.fullmatch(lines[at].rstrip("\r\n"))
        end = at + 1
        while found is not None and end < len(lines) and not _TABLE.match(lines[end]):
            end += 1
        if found is None or not _is_ours(key, lines[at + 1 : end], ours):
            out.append(lines[at])
            at += 1
            continue
        for i in range(at, end):
            line = lines[i]
            body = line.rstrip("\r\n")
            comment = found.group("comment") if i == at else _trailing_comment(body)
            if _KEPT.fullmatch(body):
                out.append(line)
            elif comment:  # the user's note on a line of ours: the note stays
                out.append(comment + line[len(body) :])
        at = end
    rest = "".join(out)
    if separator and text.startswith(rest) and rest.endswith(separator):  # ours ended the file
        rest = rest[: -len(separator)]
    return rest


# A line that starts a table (or, inside a user's multi-line array, looks like it: the caller's
# parse of the result catches a wrong cut); a blank or comment line; a `key = "string"` line.
_TABLE = re.compile(r"[ \t]*\[")
_KEPT = re.compile(r"[ \t]*(?:#.*)?")
_STRING = r"""(?:"(?:[^"\\]|\\.)*"|'[^']*')"""
_KEY_LINE = re.compile(rf"[ \t]*[A-Za-z0-9_-]+[ \t]*=[ \t]*{_STRING}[ \t]*(?P<comment>#.*)")


def _trailing_comment(line: str) -> str | None:
    match = _KEY_LINE.fullmatch(line)
    return match.group("comment") if match else None


def _is_ours(key: str, body: list[str], ours: Callable[[object], bool]) -> bool:
    """Whether the table whose lines (below its header) are BODY is one of ours."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        tables = tomllib.loads(f"[[{key}]]\n" + "".join(body)).get(key)
    except tomllib.TOMLDecodeError:
        return False  # not a whole table by itself (a multi-line value cut): the user's
    return isinstance(tables, list) and len(tables) == 1 and ours(tables[0])
