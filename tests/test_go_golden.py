"""Byte for byte with Scion's Go code: everything in tests/data/go-golden replayed through the
real sciontool (see the README there for what was recorded and how).

- every N and R line: `sciontool normalize --dialect-file d-NAME.yaml [--raw] d-NAME.jsonl`,
  one process per file;
- every P line: the hook's own entry point in process (fastpath.run, stdin and stdout swapped),
  plus a real `sciontool hook` process for one envelope per dialect file;
- every agent-info.json state: one real `sciontool hook` process per envelope, a fresh HOME per
  sequence.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, TIMED

from sciontool_py import fastpath

GOLDEN = REPO / "tests" / "data" / "go-golden"
SCIONTOOL = Path(sys.executable).with_name("sciontool")
SHOWN = 5  # differing lines shown on failure


@dataclass
class Corpus:
    folder: Path
    names: list[str]  # d-NAME.yaml / d-NAME.jsonl / g-NAME.txt

    def dialect(self, name: str) -> Path:
        return self.folder / f"d-{name}.yaml"

    def envelopes(self, name: str) -> Path:
        return self.folder / f"d-{name}.jsonl"

    def golden(self, name: str, kind: str) -> list[str]:
        """The recorded lines of one kind (N, R or P), without the prefix."""
        lines = (self.folder / f"g-{name}.txt").read_text(encoding="utf-8").split("\n")
        return [line[2:] for line in lines if line[:2] == kind + " "]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    folder = tmp_path_factory.mktemp("go-golden")
    with tarfile.open(GOLDEN / "normalize-corpus.tgz") as tar:
        for member in tar.getmembers():
            source = tar.extractfile(member) if member.isfile() else None
            if source is not None:  # flat: only the file's own name, whatever the archive says
                (folder / Path(member.name).name).write_bytes(source.read())
    names = sorted(p.name[2:-5] for p in folder.glob("d-*.yaml"))
    return Corpus(folder, names)


def env(home: Path, cache: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("SCION")}
    return {**keep, "HOME": str(home), "SCIONTOOL_CACHE_DIR": str(cache)}


class Tally:
    """Matches over many cases; the first differences, for the failure message."""

    def __init__(self) -> None:
        self.matched = self.total = 0
        self.differences: list[str] = []

    def add(self, where: str, expected: str | None, got: str | None) -> None:
        self.total += 1
        if got == expected:
            self.matched += 1
        elif len(self.differences) < SHOWN:
            self.differences.append(f"{where}\n    go:   {expected!r}\n    here: {got!r}")

    def check(self, total: int) -> None:
        report = "\n".join(self.differences)
        assert (self.matched, self.total) == (total, total), f"{self.matched}/{self.total}\n{report}"


@pytest.mark.parametrize("kind", ["N", "R"])
def test_every_normalize_line_is_gos(corpus: Corpus, kind: str, tmp_path: Path) -> None:
    tally = Tally()
    for name in corpus.names:
        raw = ["--raw"] if kind == "R" else []
        dialect, envelopes = str(corpus.dialect(name)), str(corpus.envelopes(name))
        result = subprocess.run(
            [str(SCIONTOOL), "normalize", "--dialect-file", dialect, *raw, envelopes],
            capture_output=True,
            env=env(tmp_path, tmp_path / "cache"),
            timeout=120,
        )
        assert (result.returncode, result.stderr) == (0, b""), name
        got = result.stdout.decode("utf-8").split("\n")
        for number, expected in enumerate(corpus.golden(name, kind)):
            tally.add(f"{name}:{number + 1} {kind}", expected, got[number] if number < len(got) else None)
    tally.check(1500)


def hook_in_process(dialect: Path, envelope: bytes) -> tuple[int, bytes]:
    """`sciontool hook --dialect-file DIALECT` through its real entry point, in this process."""
    stdin = io.TextIOWrapper(io.BytesIO(envelope))
    stdout = io.TextIOWrapper(io.BytesIO(), write_through=True)
    stderr = io.TextIOWrapper(io.BytesIO(), write_through=True)
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        code = fastpath.run("hook", ["--dialect-file", str(dialect)])
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return code, stdout.buffer.getvalue()


def test_every_response_is_gos(corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in env(tmp_path / "home", tmp_path / "cache").items():
        monkeypatch.setenv(name, value)
    for name in [k for k in os.environ if k.startswith("SCION")]:
        monkeypatch.delenv(name)
    (tmp_path / "home").mkdir()
    tally = Tally()
    for name in corpus.names:
        lines = corpus.envelopes(name).read_bytes().split(b"\n")
        for number, expected in enumerate(corpus.golden(name, "P")):
            _, out = hook_in_process(corpus.dialect(name), lines[number])
            tally.add(f"{name}:{number + 1} P", expected + "\n" if expected else "", out.decode())
    tally.check(1500)


def test_a_real_hook_process_prints_gos_response_for_every_dialect(corpus: Corpus, tmp_path: Path) -> None:
    tally = Tally()
    for name in corpus.names:
        lines = corpus.envelopes(name).read_bytes().split(b"\n")
        expected = corpus.golden(name, "P")
        # The first envelope that has a response, else the first one.
        number = next((i for i, p in enumerate(expected) if p), 0)
        result = subprocess.run(
            [str(SCIONTOOL), "hook", "--dialect-file", str(corpus.dialect(name))],
            input=lines[number],
            capture_output=True,
            env=env(tmp_path, tmp_path / "cache"),
            timeout=60,
        )
        want = expected[number] + "\n" if expected[number] else ""
        tally.add(f"{name}:{number + 1} P", want, result.stdout.decode())
    tally.check(len(corpus.names))


def replay_sequence(index: int, sequence: dict[str, object], root: Path) -> list[tuple[str, str, str]]:
    """(where, Go's agent-info.json, ours) after each envelope of one sequence."""
    home, cache = root / f"s{index}" / "home", root / f"s{index}" / "cache"
    home.mkdir(parents=True)
    dialect = root / f"s{index}" / "dialect.yaml"
    dialect.write_text(str(sequence["yaml"]), encoding="utf-8")
    info = home / "agent-info.json"
    if sequence["initial"] is not None:
        info.write_bytes(str(sequence["initial"]).encode("utf-8"))
    states = []
    for step, (envelope, expected) in enumerate(zip(sequence["envelopes"], sequence["go"], strict=True)):  # type: ignore[call-overload]
        subprocess.run(
            [str(SCIONTOOL), "hook", "--dialect-file", str(dialect)],
            input=envelope.encode("utf-8"),
            capture_output=True,
            env=env(home, cache),
            timeout=60,
        )
        got = info.read_text(encoding="utf-8") if info.exists() else ""  # the recording's absent
        states.append((f"sequence {index} ({sequence['dialect']}) step {step + 1}", expected, got))
    return states


@pytest.mark.slow
@TIMED  # four hook processes at a time for seconds: never beside a test that bounds a duration
def test_every_agent_info_state_is_gos(tmp_path: Path) -> None:
    sequences = json.loads(gzip.decompress((GOLDEN / "status-sequences.json.gz").read_bytes()))
    with ThreadPoolExecutor(max_workers=4) as pool:  # sequences are independent; steps are not
        results = pool.map(replay_sequence, range(len(sequences)), sequences, [tmp_path] * len(sequences))
        tally = Tally()
        for states in results:
            for where, expected, got in states:
                tally.add(where, expected, got)
    tally.check(514)
