"""`sciontool dialect check`: every loader error, plus warnings for legal but likely wrong dialects."""

from __future__ import annotations

import os
import sys

from sciontool_py.contract import fixture_files, load_fixture
from sciontool_py.dialect.load import MAX_DIALECT_BYTES, read_dialect_text
from sciontool_py.dialect.spec import DialectSpec
from sciontool_py.dialect.validate import Marks, Problem, check_text_marked
from sciontool_py.errors import SciontoolError

STDIN = "-"  # the dialect's text on stdin, named <stdin> in what is printed


def dialect_path(path: str) -> str:
    """A dialect file, or the dialect.yaml of a folder; `-` stays stdin, even beside a folder `-`."""
    return os.path.join(path, "dialect.yaml") if path != STDIN and os.path.isdir(path) else path


def envelope_keys(fixture_paths: list[str]) -> set[str]:
    """Every top-level key the envelopes of these fixtures carry."""
    keys: set[str] = set()
    for path in fixture_files(fixture_paths):
        envelope = load_fixture(path).envelope
        if isinstance(envelope, dict):
            keys.update(envelope)
    return keys


def check_file(path: str, carried: set[str] | None = None) -> list[Problem]:
    """Errors (what the loader refuses) and warnings for one dialect file.

    carried: the top-level keys the harness's envelopes are known to carry;
    without it, paths are not checked against envelopes.
    """
    where = "<stdin>" if path == STDIN else path
    if path != STDIN and not os.path.exists(path):
        return [Problem(path, 0, 0, "no such file" if path.endswith(".yaml") else "no such file or folder")]
    try:
        text = _stdin_text() if path == STDIN else read_dialect_text(path)
    except SciontoolError as exc:
        message = str(exc).removeprefix(f"{path}: ")
        return [Problem(where, 0, 0, message)]
    spec, problems, marks = check_text_marked(text, where)
    if spec is None:
        return problems
    warnings = [*_unreachable_paths(spec, marks, carried), *_orphan_responses(spec, marks)]
    warnings += _conflicting_paths(spec, marks)
    return sorted(warnings, key=lambda p: (p.line, p.col))


def _stdin_text() -> str:
    """stdin's text, within the bounds the loader sets on a file."""
    data = sys.stdin.buffer.read(MAX_DIALECT_BYTES + 1)
    if len(data) > MAX_DIALECT_BYTES:
        raise SciontoolError(f"dialect file is larger than {MAX_DIALECT_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SciontoolError("dialect file is not UTF-8") from None


def _warning(spec: DialectSpec, where: tuple[int, int], message: str) -> Problem:
    return Problem(spec.source, where[0], where[1], message, "warning")


def _unreachable_paths(spec: DialectSpec, marks: Marks, carried: set[str] | None) -> list[Problem]:
    if carried is None:
        return []
    out = []
    for raw, mapping in spec.mappings.items():
        for field, segments in mapping.fields.items():
            if segments[0] not in carried:
                out.append(
                    _warning(
                        spec,
                        marks[("mappings", raw, field)],
                        f"mappings.{raw}.fields.{field}: path .{'.'.join(segments)} can never match: "
                        f"no envelope in the fixtures has a top-level {segments[0]!r}",
                    )
                )
    return out


def _orphan_responses(spec: DialectSpec, marks: Marks) -> list[Problem]:
    return [
        _warning(
            spec,
            marks[("responses", raw)],
            f"responses.{raw}: no mapping for raw event {raw!r} (a misspelt name never gets this response)",
        )
        for raw in spec.responses
        if raw not in spec.mappings
    ]


def _conflicting_paths(spec: DialectSpec, marks: Marks) -> list[Problem]:
    """The same field of the same canonical event read from two paths by two raw names."""
    first: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
    out = []
    for raw, mapping in spec.mappings.items():
        for field, segments in mapping.fields.items():
            key = (mapping.event, field)
            if key not in first:
                first[key] = (raw, segments)
                continue
            other, other_segments = first[key]
            if other_segments != segments:
                line = marks[("mappings", other, field)][0]
                out.append(
                    _warning(
                        spec,
                        marks[("mappings", raw, field)],
                        f"mappings.{raw}.fields.{field}: {mapping.event} takes {field} from "
                        f".{'.'.join(segments)} here but from .{'.'.join(other_segments)} "
                        f"for {other!r} (line {line})",
                    )
                )
    return out
