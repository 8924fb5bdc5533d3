"""Every runnable example of README.md and docs/*.md, run with the real `sciontool` and diffed.

The convention, for whoever writes docs:

- A fenced block opened by a line that is exactly ```` ```console ```` (not indented) is run.
  Every other block (```` ```sh ````, ```` ```text ````, ```` ```yaml ````, ...) is illustration
  and is never run: use those for commands that install, need a network, or print what varies.
- In a console block, a line starting with `$ ` is a command. It continues on the next line
  while a line ends with a backslash, and through the body of a heredoc (`<<'EOF'` ... `EOF`).
  The lines after it, up to the next `$ ` line or the end of the block, are its expected output:
  stdout and stderr together, as a terminal shows them (so no output line can start with `$ `).
  Trailing spaces and trailing empty lines are ignored; nothing else is.
- A command must exit 0. To show a failure, end it with `; echo "exit $?"` and show that line.
- Each page runs in a fresh temp folder, its commands in page order (a later one sees the files
  an earlier one made), each by `bash -c` with this checkout's `sciontool` first on PATH, in
  `<CWD>` (empty at first) with HOME `<HOME>` (empty at first). SCION_*, OTEL_* and SCIONTOOL_*
  variables are unset; SCIONTOOL_CACHE_DIR, SCIONTOOL_FALLBACK_DIR and TMPDIR point into the
  temp folder; telemetry is off (SCION_TELEMETRY_ENABLED=false) unless a command sets it.
- Placeholders in expected output, and no others: `<HOME>`, `<CWD>` and `<TMP>` (the temp
  folder holding both, and the stand-in for /tmp) for those paths as printed; `<VERSION>` for
  sciontool's version; `<TIMESTAMP>` for a UTC RFC 3339 time (`2026-11-30T03:12:45.1234Z`).
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from sciontool_py import __version__
from sciontool_py.harness import INSTALLABLE, NAMES

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")
_TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z"
_PER_COMMAND_TIMEOUT = 120  # only catches a hang: the machine may be loaded


@dataclass(frozen=True)
class Example:
    line: int  # where the command starts in its page (1-based)
    command: str
    expected: list[str]


def examples(text: str) -> list[Example]:
    """The commands of every console block of a page, in order."""
    found: list[Example] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i] != "```console":
            i += 1
            continue
        i += 1
        current: Example | None = None
        while i < len(lines) and lines[i] != "```":
            if lines[i].startswith("$ "):
                start = i
                command = [lines[i][2:]]
                while command[-1].endswith("\\") and i + 1 < len(lines):
                    i += 1
                    command.append(lines[i])
                for heredoc in _HEREDOC.finditer("\n".join(command)):
                    while i + 1 < len(lines) and lines[i + 1] != heredoc.group(2):
                        i += 1
                        command.append(lines[i])
                    i += 1
                    command.append(lines[i])
                current = Example(start + 1, "\n".join(command), [])
                found.append(current)
            elif current is not None:
                current.expected.append(lines[i])
            else:
                raise ValueError(f"line {i + 1}: a console block must start with a `$ ` command")
            i += 1
        i += 1
    return found


def _trimmed(lines: list[str]) -> list[str]:
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _matches(expected: str, actual: str) -> bool:
    pattern = re.escape(expected)
    pattern = pattern.replace(re.escape("<VERSION>"), re.escape(__version__))
    pattern = pattern.replace(re.escape("<TIMESTAMP>"), _TIMESTAMP)
    return re.fullmatch(pattern, actual) is not None


def run_page(text: str, tmp: Path) -> list[str]:
    """Run a page's examples in tmp; one message per example whose output or status differs."""
    home, cwd, fallback = tmp / "home", tmp / "work", tmp / "tmp"
    for folder in (home, cwd, fallback):
        folder.mkdir()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("SCION_", "OTEL_", "SCIONTOOL_"))
    }
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        TMPDIR=str(fallback),
        SCIONTOOL_CACHE_DIR=str(tmp / "cache"),
        SCIONTOOL_FALLBACK_DIR=str(fallback),
        SCION_TELEMETRY_ENABLED="false",
        LC_ALL="C.UTF-8",
        COLUMNS="100",
    )
    places = [(str(home), "<HOME>"), (str(cwd), "<CWD>"), (str(tmp), "<TMP>")]
    problems = []
    for example in examples(text):
        ran = subprocess.run(
            ["bash", "-c", example.command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=_PER_COMMAND_TIMEOUT,
        )
        output = ran.stdout.decode("utf-8", "replace")
        for path, placeholder in places:
            output = output.replace(path, placeholder)
        actual, expected = _trimmed(output.splitlines()), _trimmed(example.expected)
        same = len(actual) == len(expected) and all(map(_matches, expected, actual))
        if ran.returncode != 0 or not same:
            diff = "\n".join(difflib.unified_diff(expected, actual, "documented", "actual", lineterm=""))
            problems.append(
                f"line {example.line}: $ {example.command}\n"
                f"exit status {ran.returncode}\n{diff or '(output as documented)'}"
            )
    return problems


@pytest.mark.parametrize(
    "page",
    [page for page in PAGES if examples(page.read_text())],
    ids=lambda page: str(page.relative_to(ROOT)),
)
def test_the_examples_of_the_page_print_what_it_says(page: Path, tmp_path: Path) -> None:
    problems = run_page(page.read_text(), tmp_path)
    assert not problems, f"{page.relative_to(ROOT)}:\n\n" + "\n\n".join(problems)


def test_the_convention_runs_commands_in_order_and_catches_a_wrong_output(tmp_path: Path) -> None:
    page = "\n".join(
        [
            "```console",
            "$ cat > made.txt <<'EOF'",
            "$ not a command: heredoc body",
            "EOF",
            "$ sed 's/^[$] //' made.txt \\",
            "    && sciontool --version && echo $HOME",
            "not a command: heredoc body",
            "sciontool <VERSION>",
            "<HOME>",
            '$ sciontool status nope; echo "exit $?"',
            "exit 0",
            "```",
            "```sh",
            "$ false",
            "```",
        ]
    )
    assert [e.line for e in examples(page)] == [2, 5, 10]
    [problem] = run_page(page, tmp_path)
    assert problem.startswith("line 10: $ sciontool status nope")
    assert "\n-exit 0\n" in problem and "\n+exit 1" in problem


def test_the_pages_name_the_harnesses_the_package_knows() -> None:
    """The harness list lives in sciontool_py.harness; README and docs/harnesses.md name the same
    harnesses in the same order: every one `harness install` wires, and agentino for `show`."""
    readme = (ROOT / "README.md").read_text()
    assert re.findall(r"^sciontool harness install (\S+) ", readme, re.M) == list(INSTALLABLE)
    row = re.search(r"wires a harness's hooks to `sciontool hook` \(([^)]*)\)", readme)
    assert row is not None and row.group(1).split(", ") == list(INSTALLABLE)
    sentence = re.search(r"^NAME is (.*?)\.$", (ROOT / "docs" / "harnesses.md").read_text(), re.M | re.S)
    assert sentence is not None and re.findall(r"`([^`]+)`", sentence.group(1)) == list(NAMES)
