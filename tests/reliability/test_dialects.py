"""A dialect.yaml the model may have written: every hostile one is refused with a clear
line, exit 1, in bounded time and memory, and nothing it asks for is executed."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import TIMED, Agent

pytestmark = TIMED

SCIONTOOL = Path(sys.executable).with_name("sciontool")
MEMORY_LIMIT = 256 << 20  # address space each refusal runs under (RLIMIT_AS)
ENVELOPE = b'{"e": "go"}'


class Refusal:
    def __init__(self, returncode: int, stderr: str, cpu_seconds: float, max_rss_kib: int) -> None:
        self.returncode = returncode
        self.stderr = stderr
        self.cpu_seconds = cpu_seconds  # user + system: what the refusal cost, whatever the load
        self.max_rss_kib = max_rss_kib


# Sets the limit, runs the hook (stdout to /dev/null) and prints the hook's peak RSS and CPU time.
# A child of this small process, not of pytest: Linux carries the parent's peak
# RSS into a forked (or vforked) child's ru_maxrss, even across exec.
LAUNCHER = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_limited(agent: Agent, *args: str, **env: str) -> Refusal:
    """`sciontool hook ARGS` under an address-space limit, with its own peak RSS and CPU time."""
    result = subprocess.run(
        [sys.executable, "-S", "-c", LAUNCHER, str(MEMORY_LIMIT), str(SCIONTOOL), "hook", *args],
        input=ENVELOPE,
        capture_output=True,
        env={**agent.env, **env},
        timeout=30,
    )
    peak, cpu = result.stdout.split()
    return Refusal(result.returncode, result.stderr.decode(), float(cpu), int(peak))


def assert_refused(agent: Agent, result: Refusal, message: str) -> None:
    print(
        f"refused in {result.cpu_seconds:.2f} CPU s, peak RSS {result.max_rss_kib} KiB: {result.stderr.strip()}"
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sciontool hook: ") and message in lines[0], lines
    assert result.cpu_seconds < 3, result.cpu_seconds
    assert result.max_rss_kib < 32 << 10, result.max_rss_kib  # KiB: far under the limit it ran with
    assert list(agent.home.iterdir()) == []  # nothing was written for the event


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return path


HEADER = "dialect: hostile\nevent_name_field: e\nmappings:\n  go: {event: tool-start}\n"


def billion_laughs() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        this, prev = chr(97 + i), chr(96 + i)
        lines.append(f"{this}: &{this} [{','.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_is_refused(agent: Agent, tmp_path: Path) -> None:
    path = write(
        tmp_path / "bomb.yaml", "dialect: hostile\nevent_name_field: e\nresponses:\n" + billion_laughs()
    )
    result = run_limited(agent, f"--dialect-file={path}")
    assert_refused(agent, result, "YAML aliases (*name) are not allowed in a dialect file")


@pytest.mark.parametrize(
    "tag",
    [
        '!!python/object/apply:os.system ["touch {marker}"]',
        "!!python/object/new:subprocess.Popen [[touch, {marker}]]",
        "!!python/name:os.system",
    ],
    ids=["object-apply", "object-new", "name"],  # !!binary is text, as in Go: hostile/test_yaml.py
)
def test_non_standard_yaml_tags_are_refused_and_never_run(agent: Agent, tmp_path: Path, tag: str) -> None:
    marker = tmp_path / f"pwned-{uuid.uuid4().hex}"
    path = write(tmp_path / "tags.yaml", HEADER + f"responses:\n  go:\n    x: {tag.format(marker=marker)}\n")
    result = run_limited(agent, f"--dialect-file={path}")
    assert_refused(agent, result, "tags.yaml:7:")
    assert "could not determine a constructor for the tag" in result.stderr or "cannot carry" in result.stderr
    assert not marker.exists()


def test_a_10_mb_dialect_is_refused_without_reading_it_all(agent: Agent, tmp_path: Path) -> None:
    path = write(tmp_path / "big.yaml", HEADER + "# " + "x" * (10 << 20) + "\n")
    result = run_limited(agent, f"--dialect-file={path}")
    assert_refused(agent, result, f"{path}: dialect file is larger than 1048576 bytes")


def test_deeply_nested_yaml_is_refused(agent: Agent, tmp_path: Path) -> None:
    path = write(tmp_path / "deep.yaml", HEADER + "responses:\n  go: " + "[" * 5000 + "]" * 5000 + "\n")
    result = run_limited(agent, f"--dialect-file={path}")
    assert_refused(agent, result, "deep.yaml:1:1: invalid YAML: nested too deeply")


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_dialect_file_that_is_not_a_regular_file_is_refused(
    agent: Agent, tmp_path: Path, special: str
) -> None:
    if special == "fifo":
        special = str(tmp_path / "fifo.yaml")
        os.mkfifo(special)  # opening it would block the hook forever
    result = run_limited(agent, f"--dialect-file={special}")
    assert_refused(agent, result, f"{special}: cannot read dialect: not a regular file")


@pytest.mark.parametrize("name", ["../etc", "../../tmp/x", "a/../../b", "..", "/etc/passwd", "Claude"])
def test_a_dialect_name_with_a_path_in_it_is_refused(agent: Agent, tmp_path: Path, name: str) -> None:
    search = tmp_path / "dialects"
    write(search / "x" / "dialect.yaml", HEADER.replace("hostile", "x"))
    result = run_limited(agent, f"--dialect={name}", SCION_DIALECTS_PATH=str(search / "sub"))
    assert_refused(agent, result, f"invalid dialect name {name!r}: expected [a-z0-9][a-z0-9._-]*")


def test_a_dialect_yaml_symlinked_out_of_the_search_path_is_refused(agent: Agent, tmp_path: Path) -> None:
    # The folder case is tests/test_hook_cli.py::test_symlinked_dialect_escaping_the_search_path_is_refused.
    outside = write(tmp_path / "outside.yaml", HEADER)
    search = tmp_path / "dialects"
    (search / "hostile").mkdir(parents=True)
    (search / "hostile" / "dialect.yaml").symlink_to(outside)
    result = run_limited(agent, "--dialect=hostile", SCION_DIALECTS_PATH=str(search))
    assert_refused(agent, result, f"resolves to {outside}, outside the search folder {search}")


def test_a_relative_symlink_climbing_out_is_refused(agent: Agent, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere" / "hostile" / "dialect.yaml", HEADER)
    search = tmp_path / "dialects"
    search.mkdir()
    (search / "hostile").symlink_to(Path("..") / "elsewhere" / "hostile")
    result = run_limited(agent, "--dialect=hostile", SCION_DIALECTS_PATH=str(search))
    assert_refused(agent, result, "outside the search folder")
