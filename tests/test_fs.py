"""The state folder in-process: where it is, the lock between hooks, safe reads and atomic writes."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from sciontool_py import fs


def test_home_is_home_or_scions_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert fs.home_dir() == str(tmp_path)
    monkeypatch.setenv("HOME", "")
    assert fs.home_dir() == "/home/scion"
    monkeypatch.delenv("HOME")
    assert fs.home_dir() == "/home/scion"


def test_the_lock_makes_a_second_holder_wait(tmp_path: Path) -> None:
    order: list[str] = []
    held = threading.Event()

    def second() -> None:
        held.wait()
        with fs.StateLock(str(tmp_path)):
            order.append("second")

    thread = threading.Thread(target=second)
    thread.start()
    with fs.StateLock(str(tmp_path)):
        held.set()
        time.sleep(0.2)  # the other thread is blocked on the lock meanwhile
        order.append("first")
    thread.join(timeout=30)
    assert order == ["first", "second"]


def test_the_lock_is_released_on_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), fs.StateLock(str(tmp_path)):
        raise RuntimeError("handler failed")
    acquired = threading.Event()

    def take() -> None:
        with fs.StateLock(str(tmp_path)):
            acquired.set()

    thread = threading.Thread(target=take)
    thread.start()
    assert acquired.wait(timeout=30)
    thread.join()


def test_a_folder_that_cannot_be_locked_is_not_an_error(tmp_path: Path) -> None:
    with fs.StateLock(str(tmp_path / "missing")) as lock:
        assert lock.fd == -1
    (tmp_path / "file").write_text("")
    with fs.StateLock(str(tmp_path / "file")) as lock:
        assert lock.fd == -1


def test_reading_a_json_object(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert fs.read_json_file(str(tmp_path), "state.json") == ({}, "")  # missing: empty, no complaint
    path.write_text('{"turn_count": 2, "nested": {"a": [1]}}')
    assert fs.read_json_file(str(tmp_path), "state.json") == (
        {"turn_count": 2.0, "nested": {"a": [1.0]}},
        "",
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"a": ', "parsing {path}: invalid JSON"),
        (b"[1, 2]", "parsing {path}: not a JSON object"),
        (b'"text"', "parsing {path}: not a JSON object"),
        (b"\xff\xfe{}", "parsing {path}: "),
        (b'{"a": 1}{"b": 2}', "parsing {path}: "),
    ],
)
def test_a_damaged_file_reads_as_empty_and_says_why(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(content)
    value, why = fs.read_json_file(str(tmp_path), "state.json")
    assert value == {}
    assert why.startswith(problem.format(path=path))
    assert "\n" not in why


def test_an_unreadable_file_reads_as_empty_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "state.json").mkdir()
    assert fs.read_json_file(str(tmp_path), "state.json") == (
        {},
        f"reading {tmp_path / 'state.json'}: not a single-link regular file (refused)",
    )


def test_a_failure_names_the_file_first() -> None:
    assert (
        fs.failure(OSError(13, "Permission denied", "/h/agent-info.json"))
        == "/h/agent-info.json: Permission denied"
    )
    assert fs.failure(OSError(28, "No space left on device")) == "No space left on device"
    assert fs.failure(OSError("odd")) == "odd"


def test_an_atomic_write_replaces_the_whole_file_with_the_mode_asked(tmp_path: Path) -> None:
    path = tmp_path / "agent-limits.json"
    path.write_text("old content that is longer than the new")
    fs.write_atomic(str(tmp_path), path.name, "new é")
    assert path.read_text(encoding="utf-8") == "new é"
    assert os.stat(path).st_mode & 0o777 == 0o644
    fs.write_atomic(str(tmp_path), path.name, "private", mode=0o600)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent-limits.json"]


def test_a_reader_sees_the_old_or_the_new_file_never_a_part(tmp_path: Path) -> None:
    path = tmp_path / "agent-info.json"
    old, new = "a" * 100_000, "b" * 200_000
    fs.write_atomic(str(tmp_path), path.name, old)
    stop = threading.Event()
    seen: set[str] = set()

    def read() -> None:
        while not stop.is_set():
            seen.add(path.read_text())

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(50):
        fs.write_atomic(str(tmp_path), path.name, new)
        fs.write_atomic(str(tmp_path), path.name, old)
    stop.set()
    reader.join()
    assert seen <= {old, new} and seen


def test_a_failed_write_names_the_target_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "agent-info.json"
    target.mkdir()  # the rename onto a folder fails
    with pytest.raises(OSError) as caught:
        fs.write_atomic(str(tmp_path), target.name, "{}")
    assert caught.value.filename == str(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent-info.json"]
    with pytest.raises(OSError) as caught:
        fs.write_atomic(str(tmp_path / "missing"), "agent-info.json", "{}")  # the folder is gone
    assert caught.value.filename == str(tmp_path / "missing" / "agent-info.json")
    assert (
        fs.failure(caught.value) == f"{tmp_path / 'missing' / 'agent-info.json'}: No such file or directory"
    )


def test_a_symlink_planted_at_the_temp_name_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (tmp_path / f".agent-info-{os.getpid()}.tmp").symlink_to(victim)
    try:
        fs.write_atomic(str(tmp_path), "agent-info.json", "{}")
    except OSError:
        pass  # refusing is fine; writing through the link is not
    assert victim.read_text() == "untouched"
