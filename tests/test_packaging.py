"""What `make demo` shows, and what a wheel ships."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import REPO


def test_demo_walks_executing_working_thinking_working() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py")], capture_output=True, check=True, text=True
    ).stdout
    assert re.findall(r'"activity": "(\w+)"', out) == ["executing", "working", "thinking", "working"]
    assert '"toolName": "read_file"' in out
    assert len(re.findall(r"^agent\.log: .* \[sciontool\] \[INFO\] ", out, re.M)) == 4


def test_wheel_ships_the_dialects_and_finds_them(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("sciontool_py-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    for dialect in ("core-agent", "claude", "gemini", "codex", "opencode", "agentino"):
        assert f"sciontool_py/dialects/{dialect}/dialect.yaml" in names
    assert any(n.endswith("entry_points.txt") for n in names)
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from sciontool_py.dialect.discover import packaged_dir; print(packaged_dir())",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found == str(tmp_path / "site" / "sciontool_py" / "dialects")
