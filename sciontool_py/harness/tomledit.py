"""Set or remove Codex's top-level `notify` in config.toml by editing lines, so comments stay.

tomlkit would keep comments too (Vibe's hooks.toml uses it), but not here:
its edits touch bytes beside notify (of 11 shapes, adding then removing notify
with it left 4 changed: a CRLF file got LF lines, a last line without a line
end got one, a split array of tables moved), its public API adds a comment
(our mark, the lines `--force` keeps) only at the end of the file, not above
notify, and it takes 7 to 10 times tomllib's CPU. So the file is
edited as lines and the result is parsed again: it must hold exactly the old
settings with notify changed, or nothing is written.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence

from sciontool_py.errors import SciontoolError

MARK = "# Scion's hook gets Codex's end-of-turn notification (sciontool harness install codex)"
# Before a notify line of the user's that `install --force` replaced: uninstall restores it.
KEPT = "# kept by sciontool harness install codex --force: "
_HEADER = re.compile(r"\s*\[")
# tomllib's time grows with the square of a key's parts (a 100,000-part key: minutes of CPU);
# tomlkit refuses keys past 100 levels. A key starts a line, a table header or an inline table's
# member; parts are bare or quoted, each alternative ending where the next must start (linear).
MAX_KEY_PARTS = 100
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_DEEP_KEY = re.compile(rf"(?:^|[{{,\[])[ \t]*(?:{_KEY_PART}[ \t]*\.[ \t]*){{{MAX_KEY_PARTS}}}", re.M)
_NOTIFY = re.compile(r"""\s*(notify|"notify"|'notify')\s*=""")


def _parse(text: str, path: str) -> dict[str, object]:
    deep = _DEEP_KEY.search(text)
    if deep is not None:
        line = text.count("\n", 0, deep.end()) + 1
        raise SciontoolError(
            f"{path}: a key of more than {MAX_KEY_PARTS} dotted parts (line {line}), deeper than TOML "
            "readers go: not edited (left untouched)"
        )
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SciontoolError(f"{path}: cannot parse: {exc}; left untouched") from None
    except RecursionError:
        raise SciontoolError(f"{path}: nested too deeply to edit; left untouched") from None


def _boundaries(lines: list[str]) -> list[bool]:
    """For each line (and the end), whether a statement may start there: outside any string and
    any open array or inline table.

    One pass over the text (parsing every prefix was quadratic: 105 s for a 3,000-line array).
    A mistake here cannot damage a file: every edit is parsed again by _checked.
    """
    at = [False] * (len(lines) + 1)
    depth = 0
    quote = ""  # the open string's delimiter: ", ', \"\"\" or \'\'\'
    for number, line in enumerate(lines):
        at[number] = depth == 0 and not quote
        i, n = 0, len(line)
        while i < n:
            if quote:
                if line.startswith(quote, i):
                    i += len(quote)
                    while len(quote) == 3 and line.startswith(quote[0], i):
                        i += 1  # up to two quotes may end a multi-line string's content
                    quote = ""
                elif line[i] == "\\" and quote[0] == '"':
                    i += 2
                else:
                    i += 1
                continue
            char = line[i]
            if char == "#":
                break
            if char in "\"'":
                quote = char * 3 if line.startswith(char * 3, i) else char
                i += len(quote)
                continue
            if char in "[{":
                depth += 1
            elif char in "]}":
                depth = max(depth - 1, 0)
            i += 1
        if len(quote) == 1:
            quote = ""  # a one-line string cannot go on: the file is invalid, tomllib says so
    at[len(lines)] = depth == 0 and not quote
    return at


def _root_end(lines: list[str], at: list[bool]) -> int:
    """Index of the first table header line (the end of the top-level keys), or len(lines)."""
    for i, line in enumerate(lines):
        if at[i] and _HEADER.match(line):
            return i
    return len(lines)


def _notify_span(lines: list[str], end: int, at: list[bool]) -> tuple[int, int] | None:
    """The lines [start, stop) of the top-level notify statement."""
    for i in range(end):
        if at[i] and _NOTIFY.match(lines[i]):
            stop = i + 1
            while stop < end and not at[stop]:
                stop += 1
            return i, stop
    return None


def render(argv: list[str]) -> str:
    # JSON's string escapes are all valid in TOML basic strings.
    return "notify = [" + ", ".join(json.dumps(arg, ensure_ascii=False) for arg in argv) + "]"


def is_ours(value: object, argv: list[str]) -> bool:
    """notify running sciontool's hook: this argv, or the same `hook` arguments after another
    program, or a project's `sh -c` line ending in them."""
    return value == argv or (isinstance(value, list) and _hook_words(value) == _hook_words(argv) != [])


def _hook_words(argv: Sequence[object]) -> list[object]:
    """The `hook ...` words a notify argv ends with ([] for none): after a program, or at the end
    of the line a project's `sh -c LINE sh` runs (followed by the notify's own argument)."""
    if len(argv) == 4 and list(argv[:2]) == ["sh", "-c"] and isinstance(argv[2], str):
        line = argv[2]
        at = line.rfind(" hook ")
        return ["hook", *line[at + 1 :].split()[1:-1]] if at >= 0 and line.endswith(' "$@"') else []
    at = max((i for i, word in enumerate(argv) if word == "hook"), default=0)
    return list(argv[at:]) if at > 0 else []


def set_notify(text: str, argv: list[str], path: str, force: bool) -> str:
    """text with notify = argv. Ours from another --command is replaced; another program only
    when forced, and then its lines stay as comments that uninstall turns back."""
    data = _parse(text, path)
    current = data.get("notify")
    if current == argv:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    ours = [MARK + newline, render(argv) + newline]
    at = _boundaries(lines)
    end = _root_end(lines, at)
    span = _notify_span(lines, end, at)
    if span is not None:
        start, stop = span
        if is_ours(current, argv):
            if start > 0 and lines[start - 1].rstrip("\r\n") == MARK:
                start -= 1
        elif not force:
            raise SciontoolError(
                f"{path}: notify is already {json.dumps(current)}; Codex runs only one notify "
                "program: pass --force to replace it (uninstall puts it back)"
            )
        else:
            ours += [KEPT + line for line in lines[start:stop]]
        lines[start:stop] = ours
    else:
        while end > 0 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1  # comments and blank lines just above a table belong to it
        if end == len(lines) and lines and not lines[-1].endswith("\n"):
            lines[-1] += newline
        lines[end:end] = ours
    new = "".join(lines)
    _checked(new, data, path)
    if _parse(new, path).get("notify") != argv:
        raise SciontoolError(f"{path}: cannot set notify without changing other settings; left untouched")
    return new


def unset_notify(text: str, argv: list[str], path: str) -> str:
    """text without our notify (and its comment), with the user's notify that install --force
    replaced put back; any other notify stays."""
    data = _parse(text, path)
    if not is_ours(data.get("notify"), argv):
        return text
    lines = text.splitlines(keepends=True)
    at = _boundaries(lines)
    span = _notify_span(lines, _root_end(lines, at), at)
    if span is None:  # written in a way this line editor does not read (an escape in the key)
        raise SciontoolError(f"{path}: cannot find the notify line to remove; left untouched")
    start, stop = span
    if start > 0 and lines[start - 1].rstrip("\r\n") == MARK:
        start -= 1
    kept = stop
    while kept < len(lines) and lines[kept].startswith(KEPT):
        kept += 1
    restored = [line[len(KEPT) :] if line.startswith(KEPT) else line for line in lines[stop:kept]]
    lines[start:kept] = restored
    new = "".join(lines)
    _checked(new, data, path)
    return new


def _checked(new: str, old: dict[str, object], path: str) -> None:
    """Every setting but notify must read as before, or nothing is written."""
    parsed = _parse(new, path)
    if {k: v for k, v in parsed.items() if k != "notify"} != {k: v for k, v in old.items() if k != "notify"}:
        raise SciontoolError(f"{path}: cannot edit notify without changing other settings; left untouched")
