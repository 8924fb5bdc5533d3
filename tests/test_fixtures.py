"""Every fixture through the real `sciontool normalize`.

In process, each fixture is its own test item through the sciontool pytest
plugin (`sciontool_fixtures` in pyproject.toml), as a dialect author runs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from sciontool_py.authoring.contract import fixture_files
from sciontool_py.dialect.discover import find_dialect
from sciontool_py.dialect.load import load_dialect

FILES = fixture_files([str(FIXTURES)])
FOLDERS = sorted({Path(f).parent for f in FILES})


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_cli_normalize_prints_every_expected_event(folder: Path) -> None:
    files = sorted(folder.glob("*.json"))
    fixtures = [json.loads(f.read_text()) for f in files]
    own = folder / "dialect.yaml"
    spec = load_dialect(str(own)) if own.exists() else find_dialect(folder.name)
    # normalize reads named envelopes only: a fixture's `event` (what `hook --event` gives a
    # harness that names none) goes into the dialect's name field, which gives the same raw name.
    jsonl = "".join(
        json.dumps({spec.name_fields[0]: fx["event"], **fx["envelope"]} if "event" in fx else fx["envelope"])
        + "\n"
        for fx in fixtures
    )
    choose = f"--dialect-file={own}" if own.exists() else f"--dialect={folder.name}"
    out = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "normalize", choose],
        input=jsonl.encode(),
        capture_output=True,
        check=True,
    )
    assert [json.loads(line) for line in out.stdout.decode().splitlines()] == [
        fx["expect"] for fx in fixtures
    ]


def test_every_mapped_raw_event_of_every_shipped_dialect_has_a_fixture() -> None:
    for folder in FOLDERS:
        own = folder / "dialect.yaml"
        spec = load_dialect(str(own)) if own.exists() else find_dialect(folder.name)
        covered = {_raw_name(spec, json.loads(f.read_text())) for f in folder.glob("*.json")}
        assert set(spec.mappings) <= covered, f"{folder.name}: no fixture for {set(spec.mappings) - covered}"


def _raw_name(spec, fixture: dict[str, object]) -> object:  # type: ignore[no-untyped-def]
    envelope = fixture["envelope"]
    return next((envelope[f] for f in spec.name_fields if envelope.get(f)), fixture.get("event"))


def test_fixtures_run_as_items_of_the_sciontool_plugin(pytestconfig: pytest.Config) -> None:
    # Without the entry point (a stale install), the fixtures would silently not run.
    assert pytestconfig.pluginmanager.hasplugin("sciontool")
    assert pytestconfig.getini("sciontool_fixtures") == [FIXTURES]
