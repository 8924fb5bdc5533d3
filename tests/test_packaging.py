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


def _wheel_contents(tmp_path: Path) -> tuple[set[str], Path]:
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
        archive.extractall(tmp_path / "site")
        return set(archive.namelist()), tmp_path / "site"


def test_wheel_ships_the_dialects_and_finds_them(tmp_path: Path) -> None:
    names, site = _wheel_contents(tmp_path)
    for dialect in ("core-agent", "claude", "gemini", "codex", "opencode", "agentino"):
        assert f"sciontool_py/dialects/{dialect}/dialect.yaml" in names
    assert any(n.endswith("entry_points.txt") for n in names)
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from sciontool_py.dialect.load import packaged_dir; print(packaged_dir())",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found == str(site / "sciontool_py" / "dialects")


def test_wheel_ships_license_typing_marker_and_a_schema_every_modeline_resolves_to(tmp_path: Path) -> None:
    names, site = _wheel_contents(tmp_path)
    assert "sciontool_py/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    dialects = site / "sciontool_py" / "dialects"
    for dialect_file in dialects.glob("*/dialect.yaml"):
        first = dialect_file.read_text().splitlines()[0]
        target = first.removeprefix("# yaml-language-server: $schema=")
        assert target != first, f"{dialect_file} has no schema modeline"
        assert (dialect_file.parent / target).resolve() == dialects / "dialect.schema.json"
    assert (dialects / "dialect.schema.json").read_text() == (
        REPO / "dialects" / "dialect.schema.json"
    ).read_text()
    printed = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "dialect", "schema", "--path"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert printed == str(dialects / "dialect.schema.json")


def test_a_typed_user_script_passes_mypy_strict(tmp_path: Path) -> None:
    """py.typed: a user's `mypy --strict` sees the package's types instead of refusing the import."""
    script = tmp_path / "use_emitter.py"
    script.write_text(
        "from sciontool_py.emitter import Dispatcher, load_config\n\n"
        "def make(path: str) -> Dispatcher:\n"
        "    return Dispatcher(load_config(path))\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_wheel_ships_the_opencode_bridge(tmp_path: Path) -> None:
    names, site = _wheel_contents(tmp_path)
    assert "sciontool_py/harness/opencode_bridge.js" in names
    shown = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "harness", "show", "opencode", "--project", "p"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert "export const SciontoolBridge" in shown.stdout
