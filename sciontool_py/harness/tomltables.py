"""Our tables in a TOML array of tables (`[[hooks]]`), added and taken away with tomlkit.

tomlkit parses a file and writes it back byte for byte, comments and spacing
included, except one whose array of tables is split by another table (it
writes that table after the array): such a file is refused. Its edits may
touch bytes beside them (a new table gets a blank line before it, a CRLF file
LF lines, a last line without its end one), so our tables go in as text we
render, with the file's line ends: after the user's last table of the array,
or at the end of a file without one; what install had to put before them (a
line end, a blank line) is remembered as a separator. The caller checks that
`remove` undoes an `add` exactly before anything is written.
"""

from __future__ import annotations

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
    """text without the array's tables that are ours (the array too when nothing else is left in
    it), and the separator install put before them when they ended the file."""
    doc = _document(text, path)
    array = _array(doc, key, path)
    mine = [i for i, table in enumerate(array or []) if ours(table.unwrap())]
    if array is None or not mine:
        return text
    for i in reversed(mine):
        del array[i]
    if not len(array):
        del doc[key]
    rest = doc.as_string()
    if separator and text.startswith(rest) and rest.endswith(separator):  # ours ended the file
        rest = rest[: -len(separator)]
    return rest
