"""What `make demo` shows, and what a wheel and an sdist ship."""

from __future__ import annotations

import email
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from conftest import REPO
from standin import eventually


def test_demo_walks_executing_working_thinking_working_and_says_what_each_means(tmp_path: Path) -> None:
    # Its throwaway HOME under a TMPDIR of the test's own, where what it leaves behind is seen.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py")],
        capture_output=True,
        check=True,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    ).stdout
    # The hooks' helper, forked in that HOME, leaves once the HOME is gone: nothing is left.
    assert list(scratch.iterdir()) == []
    assert eventually(lambda: not processes_naming(scratch)), processes_naming(scratch)
    assert out.startswith("Scion runs coding agents ")
    walked = ["executing", "working", "thinking", "working"]
    assert re.findall(r'"activity": "(\w+)"', out) == walked
    assert '"toolName": "read_file"' in out
    assert len(re.findall(r"^agent\.log: .* \[sciontool\] \[INFO\] ", out, re.M)) == 4
    assert re.findall(r"^=> (\w+): \S", out, re.M) == walked  # each step's activity, explained
    # The next command it names wires a real harness, and as printed it writes nothing.
    [command] = re.findall(r"^  (\S+ harness install claude --dry-run)$", out, re.M)
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    tried = subprocess.run(
        command.split(), cwd=project, env={**os.environ, "HOME": str(home)}, capture_output=True, text=True
    )
    assert (tried.returncode, tried.stderr) == (0, "")
    assert f"+++ {project}/.claude/settings.json" in tried.stdout
    assert list(home.iterdir()) == list(project.iterdir()) == []


def processes_naming(folder: Path) -> list[int]:
    """The processes whose command line names FOLDER (a helper retitles itself `... --home HOME`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if os.fsencode(folder) in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile
    return found


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


def test_the_index_page_description_links_only_into_the_repository(tmp_path: Path) -> None:
    """README's relative links break on an index page: the wheel's description has them absolute,
    each naming a file of this checkout under the Repository URL."""
    _, site = _wheel_contents(tmp_path)
    [metadata_file] = site.glob("sciontool_py-*.dist-info/METADATA")
    metadata = email.message_from_string(metadata_file.read_text(encoding="utf-8"))
    urls = dict(value.split(", ", 1) for value in metadata.get_all("Project-URL", []))
    assert metadata["Description-Content-Type"] == "text/markdown"
    description = metadata.get_payload()
    assert isinstance(description, str) and description.startswith("# sciontool-py\n")
    targets = re.findall(r"\]\(([^)\s]+)\)", description)
    inside = [t for t in targets if t.startswith(urls["Repository"] + "/")]
    assert len(inside) >= 19  # README's links into docs/ and the rest of the checkout
    assert [t for t in targets if not t.startswith("https://")] == []
    for target in inside:
        path = target.removeprefix(urls["Repository"] + "/blob/main/").partition("#")[0]
        assert (REPO / path).is_file(), target


def _sdist_names(tmp_path: Path) -> set[str]:
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(tmp_path)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    [sdist] = tmp_path.glob("sciontool_py-*.tar.gz")
    with tarfile.open(sdist) as archive:
        return {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}


def test_the_sdist_carries_every_file_its_make_test_reads(tmp_path: Path) -> None:
    names = _sdist_names(tmp_path)
    lint = re.search(r"^\t\$\(BIN\)/ruff check (.+)$", (REPO / "Makefile").read_text(), re.M)
    assert lint is not None
    # What `make lint` checks, what pytest collects (fixtures too, through the plugin), the pages
    # test_docs_examples runs, the demo, the dialects the package ships, and the build's own files.
    needed = {*lint.group(1).split(), "tests", "fixtures", "docs", "examples", "dialects"}
    needed |= {"pyproject.toml", "Makefile", "README.md", "CHANGELOG.md", "LICENSE"}
    missing = []
    for top in sorted(needed):
        if (REPO / top).is_file():
            missing += [] if top in names else [top]
            continue
        for folder, dirs, files in os.walk(REPO / top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for file in files:
                relative = (Path(folder) / file).relative_to(REPO).as_posix()
                if relative not in names:
                    missing.append(relative)
    assert not missing
