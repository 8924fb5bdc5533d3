"""Fixture-based contract tests: envelope -> expected canonical event (and response).

A fixture is ``{"event"?: NAME, "envelope": {...}, "expect": {...}, "response"?: {...}}``
in a ``.json`` file; a folder of fixtures may hold the ``dialect.yaml`` they test.
``event`` is the raw event name the hook is given with ``--event``, for a harness
whose envelopes name none (agentino).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from sciontool_py import gojson
from sciontool_py.dialect.normalize import normalize
from sciontool_py.errors import FixtureError, JSONError, SciontoolError

if TYPE_CHECKING:
    from sciontool_py.dialect.spec import DialectSpec

_ABSENT = object()


class Fixture:
    __slots__ = ("envelope", "event", "expect", "path", "response")

    def __init__(
        self, path: str, envelope: object, expect: dict[str, object], response: object, event: str | None
    ) -> None:
        self.path = path
        self.envelope = envelope
        self.expect = expect
        self.response = response  # _ABSENT when the fixture does not check it
        self.event = event  # `hook --event`: the raw name when the envelope carries none

    @property
    def name(self) -> str:
        return os.path.splitext(os.path.basename(self.path))[0]


def load_fixture(path: str) -> Fixture:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise FixtureError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise FixtureError(f"{path}: not JSON: {exc}") from None
    except RecursionError:
        raise FixtureError(f"{path}: not JSON: nested too deeply") from None
    if not isinstance(data, dict) or "envelope" not in data or not isinstance(data.get("expect"), dict):
        raise FixtureError(f'{path}: expected an object with "envelope" and an "expect" object')
    unknown = sorted(set(data) - {"event", "envelope", "expect", "response"})
    if unknown:
        raise FixtureError(f"{path}: unknown key(s) {', '.join(unknown)}")
    event = data.get("event")
    if event is not None and not (isinstance(event, str) and event):
        raise FixtureError(f'{path}: "event" must be a non-empty string (the raw name `hook --event` gives)')
    # Go decodes numbers as float64; feed the envelope through the same decoder.
    try:
        envelope = gojson.loads(json.dumps(data["envelope"]))
    except JSONError as exc:
        raise FixtureError(f"{path}: envelope: {exc}") from None
    except RecursionError:
        raise FixtureError(f"{path}: envelope: nested too deeply") from None
    return Fixture(path, envelope, data["expect"], data.get("response", _ABSENT), event)


def is_fixture_name(name: str) -> bool:
    # A JSON Schema beside a scaffolded dialect is no fixture.
    return name.endswith(".json") and not name.endswith(".schema.json")


def fixture_files(paths: list[str]) -> list[str]:
    """Fixture files among paths (files, or folders searched recursively), sorted."""
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for folder, _, names in sorted(os.walk(path)):
                found += sorted(os.path.join(folder, n) for n in names if is_fixture_name(n))
        elif os.path.exists(path):
            found.append(path)
        else:
            raise FixtureError(f"{path}: no such file or folder")
    return found


def folder_dialect_file(fixture_path: str) -> str | None:
    """The dialect.yaml beside a fixture, if its folder has one."""
    candidate = os.path.join(os.path.dirname(fixture_path), "dialect.yaml")
    return candidate if os.path.isfile(candidate) else None


class DialectChooser:
    """The dialect each fixture is tested against.

    A forced dialect (name or file) applies to every fixture; otherwise each
    folder uses its own dialect.yaml, else the dialect named like the folder.
    Resolved once per folder.
    """

    def __init__(self, dialect: str | None = None, dialect_file: str | None = None) -> None:
        from sciontool_py.dialect.discover import resolve

        # Resolved now, so a bad --dialect is one error, not one per fixture.
        self.forced = resolve(dialect, dialect_file) if dialect or dialect_file else None
        self.by_folder: dict[str, DialectSpec | SciontoolError] = {}

    def spec_for(self, fixture_path: str) -> DialectSpec:
        if self.forced is not None:
            return self.forced
        folder = os.path.dirname(os.path.abspath(fixture_path))
        if folder not in self.by_folder:
            self.by_folder[folder] = self._folder_spec(fixture_path)
        found = self.by_folder[folder]
        if isinstance(found, SciontoolError):
            raise found
        return found

    @staticmethod
    def _folder_spec(fixture_path: str) -> DialectSpec | SciontoolError:
        from sciontool_py.dialect.discover import find_dialect
        from sciontool_py.dialect.load import load_dialect

        own = folder_dialect_file(fixture_path)
        try:
            if own:
                return load_dialect(own)
            return find_dialect(os.path.basename(os.path.dirname(os.path.abspath(fixture_path))))
        except SciontoolError as exc:
            return exc


def check_fixture(chooser: DialectChooser, path: str) -> list[str]:
    """What is wrong with one fixture file, as lines; empty when it passes."""
    try:
        return differences(chooser.spec_for(path), load_fixture(path))
    except SciontoolError as exc:
        return [str(exc)]
    except RecursionError:  # an expectation nested deeper than comparing can go
        return [f"{path}: nested too deeply to compare"]


def failure_report(path: str, problems: list[str], verb: str = "FAIL") -> str:
    """`FAIL path` then one indented line per difference."""
    return "\n".join([f"{verb} {path}", *(f"    {p}" for p in problems)])


def update_fixture(chooser: DialectChooser, path: str) -> list[str]:
    """Write what the dialect produces now into the fixture's expect (and response); returns
    the differences it had (empty: the file is left untouched). Only the fixture's own
    problems (a bad file, a dialect that cannot be found) raise."""
    fixture = load_fixture(path)
    spec = chooser.spec_for(path)
    problems = differences(spec, fixture)
    if not problems:
        return []
    try:
        got, response = actual(spec, fixture)
    except SciontoolError as exc:
        raise FixtureError(f"{path}: cannot update: normalization failed: {exc}") from None
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)  # the envelope stays as recorded, key order kept
    document["expect"] = got
    if "response" in document or response is not None:
        document["response"] = response
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    from sciontool_py.fs import write_file

    try:
        write_file(path, text)
    except OSError as exc:
        raise FixtureError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return problems


def actual(spec: DialectSpec, fixture: Fixture) -> tuple[dict[str, object], object]:
    """The canonical event (as JSON data) and the response for a fixture's envelope."""
    event = normalize(spec, fixture.envelope, fallback_name=fixture.event)
    got = json.loads(event.to_json())
    return got, spec.responses.get(event.raw_name)


def differences(spec: DialectSpec, fixture: Fixture) -> list[str]:
    """Readable field-by-field differences; empty when the fixture passes."""
    try:
        got, response = actual(spec, fixture)
    except SciontoolError as exc:
        return [f"normalization failed: {exc}"]
    out = _compare("", fixture.expect, got)
    if fixture.response is not _ABSENT and fixture.response != response:
        out.append(f"response: expected {_show(fixture.response)}, got {_show(response)}")
    return out


def _compare(prefix: str, expect: dict[str, object], got: dict[str, object]) -> list[str]:
    out = []
    for key in list(expect) + [k for k in got if k not in expect]:
        where = f"{prefix}{key}"
        want, have = expect.get(key, _ABSENT), got.get(key, _ABSENT)
        if isinstance(want, dict) and isinstance(have, dict):
            out += _compare(f"{where}.", want, have)
        elif want is _ABSENT:
            out.append(f"{where}: unexpected {_show(have)}")
        elif have is _ABSENT:
            out.append(f"{where}: missing, expected {_show(want)}")
        elif want != have or type(want) is not type(have):
            out.append(f"{where}: expected {_show(want)}, got {_show(have)}")
    return out


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form: show it escaped
        return json.dumps(value)
    return text
