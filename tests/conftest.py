"""Shared helpers: run the real `sciontool` in a throwaway HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile import Machine, new_machine

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def sciontool(
    *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real command, text in and out."""
    return subprocess.run(
        [sys.executable, "-m", "sciontool_py", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


class Agent:
    """A temp HOME with the sciontool command pointed at it."""

    def __init__(self, home: Path, cache: Path) -> None:
        self.home = home
        self.env = {
            **os.environ,
            "HOME": str(home),
            "SCIONTOOL_CACHE_DIR": str(cache),
        }
        for name in (
            "SCION_DIALECTS_PATH",
            "SCION_HUB_ENDPOINT",
            "SCION_HUB_URL",
            "SCION_AGENT_ID",
            "SCION_AUTH_TOKEN",
            "SCION_MAX_TURNS",
            "SCION_MAX_MODEL_CALLS",
            "SCION_LOG_LEVEL",
            "SCION_DEBUG",
        ):
            self.env.pop(name, None)

    def run(
        self, *args: str, stdin: bytes | str | dict[str, object] = b"", **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        if isinstance(stdin, dict):
            stdin = json.dumps(stdin)
        if isinstance(stdin, str):
            stdin = stdin.encode()
        return subprocess.run(
            [sys.executable, "-m", "sciontool_py", *args],
            input=stdin,
            capture_output=True,
            env={**self.env, **env},
            timeout=60,
        )

    def hook(
        self, envelope: dict[str, object] | str | bytes, *args: str, **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        return self.run("hook", *args, stdin=envelope, **env)

    @property
    def info(self) -> dict[str, object]:
        return json.loads((self.home / "agent-info.json").read_text())

    @property
    def log_lines(self) -> list[str]:
        path = self.home / "agent.log"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    if os.path.isdir("/home/scion"):
        pytest.skip("/home/scion exists: Scion's rule sends agent.log there")
    home = tmp_path / "home"
    home.mkdir()
    return Agent(home, tmp_path / "cache")


@pytest.fixture
def machine() -> Iterator[Machine]:
    """A hostile machine (see hostile.py): HOME outside /tmp, a private /tmp when root."""
    if os.path.isdir("/home/scion"):
        pytest.skip("/home/scion exists: Scion's rule sends agent.log there")
    yield from new_machine()
