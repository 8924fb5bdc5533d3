"""Fixture-based contract tests: envelope -> expected canonical event (and response).

A fixture is ``{"envelope": {...}, "expect": {...}, "response"?: {...}}`` in
a ``.json`` file; a folder of fixtures may hold the ``dialect.yaml`` they test.
"""

from __future__ import annotations

import json
import os

from sciontool_py import gojson
from sciontool_py.dialect.normalize import normalize
from sciontool_py.errors import SciontoolError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.dialect.spec import DialectSpec

_ABSENT = object()


class FixtureError(SciontoolError):
    """A fixture file that cannot be used."""


class Fixture:
    __slots__ = ("envelope", "expect", "path", "response")

    def __init__(self, path: str, envelope: object, expect: dict[str, object], response: object) -> None:
        self.path = path
        self.envelope = envelope
        self.expect = expect
        self.response = response  # _ABSENT when the fixture does not check it

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
    if not isinstance(data, dict) or "envelope" not in data or not isinstance(data.get("expect"), dict):
        raise FixtureError(f'{path}: expected an object with "envelope" and an "expect" object')
    unknown = sorted(set(data) - {"envelope", "expect", "response"})
    if unknown:
        raise FixtureError(f"{path}: unknown key(s) {', '.join(unknown)}")
    # Go decodes numbers as float64; feed the envelope through the same decoder.
    envelope = gojson.loads(json.dumps(data["envelope"]))
    return Fixture(path, envelope, data["expect"], data.get("response", _ABSENT))


def fixture_files(paths: list[str]) -> list[str]:
    """Fixture files among paths (files, or folders searched recursively), sorted."""
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for folder, _, names in sorted(os.walk(path)):
                found += sorted(os.path.join(folder, n) for n in names if n.endswith(".json"))
        elif os.path.exists(path):
            found.append(path)
        else:
            raise FixtureError(f"{path}: no such file or folder")
    return found


def folder_dialect_file(fixture_path: str) -> str | None:
    """The dialect.yaml beside a fixture, if its folder has one."""
    candidate = os.path.join(os.path.dirname(fixture_path), "dialect.yaml")
    return candidate if os.path.isfile(candidate) else None


def actual(spec: DialectSpec, fixture: Fixture) -> tuple[dict[str, object], object]:
    """The canonical event (as JSON data) and the response for a fixture's envelope."""
    event = normalize(spec, fixture.envelope)
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
    return json.dumps(value, ensure_ascii=False)
