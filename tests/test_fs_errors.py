"""The hardened file layer (fs.py) when HOME is not what it should be, in-process on real folders:
a folder on the way missing, a file or a symlink where a folder belongs, a folder or a hard link
where a file belongs. Each call refuses with an error naming the path the user knows, and leaves
the link's target and everything else as it was."""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from sciontool_py import fs

SYMLINK = "a symbolic link on the path (never followed)"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A state folder with a real folder, a symlink to a folder outside, and a file where a folder belongs."""
    folder = tmp_path / "home"
    (folder / "real").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("outside")
    (folder / "link").symlink_to(outside)
    (folder / "file").write_text("a file")
    return folder


def outside(tree: Path) -> dict[str, str]:
    """What the symlink's target folder holds: it must never change."""
    target = tree.parent / "outside"
    return {name: (target / name).read_text() for name in os.listdir(target)}


def refusal(call: Callable[[], object]) -> tuple[int | None, str]:
    with pytest.raises(OSError) as caught:
        call()
    return caught.value.errno, fs.failure(caught.value)


def test_write_atomic_refuses_a_missing_linked_or_file_folder_on_the_way(tree: Path) -> None:
    root = str(tree)
    assert refusal(lambda: fs.write_atomic(root, "missing/f", "x")) == (
        errno.ENOENT,
        f"{tree}/missing/f: No such file or directory",
    )
    assert refusal(lambda: fs.write_atomic(root, "link/f", "x")) == (errno.ELOOP, f"{tree}/link/f: {SYMLINK}")
    assert refusal(lambda: fs.write_atomic(root, "file/f", "x")) == (
        errno.ENOTDIR,
        f"{tree}/file/f: Not a directory",
    )
    assert not (tree / "missing").exists() and (tree / "file").read_text() == "a file"
    assert outside(tree) == {"f": "outside"}


def test_ensure_folder_creates_once_and_refuses_what_it_cannot_walk(tree: Path) -> None:
    root = str(tree)
    fs.ensure_folder(root, "real/new", mode=0o700)
    fs.ensure_folder(root, "real/new")  # there already: no error
    assert (tree / "real" / "new").stat().st_mode & 0o777 == 0o700
    assert refusal(lambda: fs.ensure_folder(root, "missing/new")) == (
        errno.ENOENT,
        f"{tree}/missing/new: No such file or directory",
    )
    assert refusal(lambda: fs.ensure_folder(root, "link/new")) == (errno.ELOOP, f"{tree}/link/new: {SYMLINK}")
    assert refusal(lambda: fs.ensure_folder(root, "file/new")) == (
        errno.ENOTDIR,
        f"{tree}/file/new: Not a directory",
    )
    assert outside(tree) == {"f": "outside"}


def test_open_folder_reaches_only_a_real_folder(tree: Path) -> None:
    fd = fs.open_folder(str(tree), "real")
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(tree / "real"))
        assert os.get_inheritable(fd) is False  # a started worker inherits only what it is handed
    finally:
        os.close(fd)
    assert refusal(lambda: fs.open_folder(str(tree), "link")) == (errno.ELOOP, f"{tree}/link: {SYMLINK}")
    assert refusal(lambda: fs.open_folder(str(tree), "file")) == (
        errno.ENOTDIR,
        f"{tree}/file: Not a directory",
    )
    with pytest.raises(FileNotFoundError) as caught:
        fs.open_folder(str(tree), "missing")
    assert caught.value.filename == f"{tree}/missing"


def test_remove_never_goes_through_a_link_and_never_removes_a_folder(tree: Path) -> None:
    root = str(tree)
    (tree / "real" / "gone").write_text("x")
    fs.remove(root, "real/gone")
    fs.remove(root, "real/gone")  # missing now: no error
    fs.remove(root, "missing/gone")  # a missing folder on the way too
    assert os.listdir(tree / "real") == []
    assert refusal(lambda: fs.remove(root, "link/f")) == (errno.ELOOP, f"{tree}/link/f: {SYMLINK}")
    assert refusal(lambda: fs.remove(root, "real")) == (errno.EISDIR, f"{tree}/real: Is a directory")
    assert (tree / "real").is_dir() and outside(tree) == {"f": "outside"}


def test_append_refuses_a_hard_link_a_folder_and_a_missing_folder(tree: Path) -> None:
    root = str(tree)
    os.link(tree.parent / "outside" / "f", tree / "hard")
    assert refusal(lambda: fs.append(root, "hard", b"x\n")) == (
        errno.EINVAL,
        f"{tree}/hard: not a single-link regular file (refused)",
    )
    assert refusal(lambda: fs.append(root, "real", b"x\n"))[1] == f"{tree}/real: Is a directory"
    assert refusal(lambda: fs.append(root, "missing/log", b"x\n")) == (
        errno.ENOENT,
        f"{tree}/missing/log: No such file or directory",
    )
    assert refusal(lambda: fs.append(root, "link/f", b"x\n")) == (errno.ELOOP, f"{tree}/link/f: {SYMLINK}")
    assert outside(tree) == {"f": "outside"}


def test_regular_size_is_none_for_anything_but_a_plain_file(tree: Path) -> None:
    os.mkfifo(tree / "fifo")
    (tree / "sized").write_bytes(b"12345")
    assert fs.regular_size(str(tree), "sized") == 5
    for rel in ("fifo", "real", "link", "link/f", "missing", "file/x"):
        assert fs.regular_size(str(tree), rel) is None, rel


def test_a_json_state_file_that_is_not_an_object_reads_empty_and_says_so(tree: Path) -> None:
    (tree / "list.json").write_text("[1, 2]")
    assert fs.read_json_file(str(tree), "list.json") == ({}, f"parsing {tree}/list.json: not a JSON object")
    assert fs.read_json_file(str(tree), "link/f") == ({}, f"reading {tree}/link/f: {SYMLINK}")


def test_the_state_file_lock_refuses_what_is_not_a_plain_file(tree: Path) -> None:
    os.mkfifo(tree / "fifo.lock")
    (tree / "link.lock").symlink_to(tree.parent / "outside" / "f")
    for name, reason in (
        ("fifo.lock", "not a single-link regular file (refused)"),
        ("link.lock", SYMLINK),
    ):
        with pytest.raises(OSError) as caught, fs.FileLock(str(tree), name, wait=0):
            pass
        assert fs.failure(caught.value) == f"{tree}/{name}: {reason}"
    assert outside(tree) == {"f": "outside"}


def test_write_atomic_works_off_the_main_thread_and_keeps_anothers_sigterm_handler(tree: Path) -> None:
    errors: list[BaseException] = []

    def write() -> None:
        try:
            fs.write_atomic(str(tree), "real/thread", "from a thread")
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    thread.join()
    assert errors == [] and (tree / "real" / "thread").read_text() == "from a thread"

    def handler(signum: int, frame: object) -> None:
        pass

    previous = signal.signal(signal.SIGTERM, handler)  # an embedding program handles SIGTERM itself
    try:
        fs.write_atomic(str(tree), "real/main", "from main")
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (tree / "real" / "main").read_text() == "from main"
