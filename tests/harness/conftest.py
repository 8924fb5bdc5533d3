"""`sciontool harness` in this process, for the tests of what its commands do to files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import CliHere, Ran


@pytest.fixture(autouse=True)
def _sciontool_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sciontool` on PATH, as for a user who installed it: install then writes the bare name.
    (Without it, install writes this program's absolute path: test_program.py.)"""
    venv_bin = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture
def harness_here(cli_here: CliHere, monkeypatch: pytest.MonkeyPatch) -> CliHere:
    """`harness(home, *args, cwd=None)` of test_merge.py through the CLI's own entry, cli.run, in
    this process: the environment it gives the process (HOME, no SCION_DIALECTS_PATH nor
    CODEX_HOME), and the current folder. Each command reads them when it runs. It spares an
    interpreter start that imports typer and pydantic; the tests that keep `harness` and
    test_roundtrip.py's realistic starts prove the same commands as processes."""
    start = os.getcwd()

    def here(home: Path, *args: str, cwd: Path | None = None) -> Ran:
        monkeypatch.delenv("SCION_DIALECTS_PATH", raising=False)
        monkeypatch.delenv("CODEX_HOME", raising=False)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.chdir(cwd if cwd is not None else start)
        return cli_here("harness", *args)

    return here
