"""The hardened file layer (fs.py) and console output, in process: what each call
refuses, what it leaves behind, how long it may wait."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest
from conftest import HANG_BOUND, TIMED

from sciontool_py import console, fs, gojson
from sciontool_py.errors import JSONError

pytestmark = TIMED  # every run is bounded in time: never beside the process flood


def test_read_bytes_refuses_whatever_is_not_a_plain_file_reached_plainly(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("secret")
    home = tmp_path / "home"
    (home / "real").mkdir(parents=True)
    (home / "real" / "f").write_text("ok")
    os.mkfifo(home / "fifo")
    (home / "link").symlink_to(outside)
    (home / "via").symlink_to(home / "real")
    os.link(outside, home / "hard")
    (home / "big").write_bytes(b"x" * 11)

    assert fs.read_bytes(str(home), "real/f") == b"ok"
    assert fs.read_bytes(str(home), "missing") is None
    assert fs.read_bytes(str(home), "nowhere/f") is None
    refusals = {
        "fifo": "not a single-link regular file (refused)",
        "real": "not a single-link regular file (refused)",
        "hard": "not a single-link regular file (refused)",
        "link": "a symbolic link on the path (never followed)",
        "via/f": "a symbolic link on the path (never followed)",
    }
    for rel, reason in refusals.items():
        with pytest.raises(OSError) as caught:
            fs.read_bytes(str(home), rel)
        assert fs.failure(caught.value) == f"{home / rel}: {reason}"
    with pytest.raises(OSError, match="larger than 10 bytes"):
        fs.read_bytes(str(home), "big", limit=10)


def test_private_reads_need_the_users_own_unshared_file_and_folder(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    os.chmod(tmp_path, 0o700)
    assert fs.read_bytes(str(tmp_path), "f", private=True) == b"x"
    os.chmod(tmp_path / "f", 0o666)
    with pytest.raises(OSError, match="owned by another user or writable by others"):
        fs.read_bytes(str(tmp_path), "f", private=True)
    os.chmod(tmp_path / "f", 0o600)
    os.chmod(tmp_path, 0o777)
    with pytest.raises(OSError, match="owned by another user or writable by others"):
        fs.read_bytes(str(tmp_path), "f", private=True)


def test_write_atomic_replaces_links_and_fifos_and_leaves_nothing_on_failure(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("untouched")
    home = tmp_path / "home"
    home.mkdir()
    (home / "link").symlink_to(outside)
    os.mkfifo(home / "fifo")
    (home / "dir").mkdir()
    for name in ("link", "fifo"):
        fs.write_atomic(str(home), name, "new")
        assert (home / name).read_text() == "new" and not (home / name).is_symlink()
        assert (home / name).stat().st_mode & 0o777 == 0o644
    assert outside.read_text() == "untouched"
    with pytest.raises(IsADirectoryError) as caught:
        fs.write_atomic(str(home), "dir", "x")
    assert caught.value.filename == str(home / "dir")  # the path the user knows, not the temp file
    assert sorted(os.listdir(home)) == ["dir", "fifo", "link"]  # no temp file left


def test_append_refuses_links_and_fifos(tmp_path: Path) -> None:
    (tmp_path / "target").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    os.mkfifo(tmp_path / "fifo")
    fs.append(str(tmp_path), "log", b"one\n")
    fs.append(str(tmp_path), "log", b"two\n")
    assert (tmp_path / "log").read_bytes() == b"one\ntwo\n"
    for name in ("link", "fifo"):
        with pytest.raises(OSError):
            fs.append(str(tmp_path), name, b"x\n")
    assert (tmp_path / "target").read_text() == ""


def hold(folder: Path) -> int:
    fd = os.open(folder, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_the_lock_gives_up_after_its_bound_in_the_main_thread_and_in_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = hold(tmp_path)
    try:
        results: list[tuple[str, float]] = []

        def take() -> None:
            started = time.monotonic()
            with fs.StateLock(str(tmp_path), wait=0.3) as lock:
                results.append((lock.given_up, time.monotonic() - started))

        take()  # the main thread
        worker = threading.Thread(target=take)  # and another, where no signal could be handled
        worker.start()
        worker.join(HANG_BOUND)
    finally:
        os.close(holder)
    assert len(results) == 2
    for given_up, waited in results:
        assert (
            given_up
            == f"State lock on {tmp_path} still held by another process after 0.3s; updating state without it"
        )
        assert 0.25 < waited < HANG_BOUND, waited


def test_the_lock_is_taken_when_the_holder_lets_go_in_time(tmp_path: Path) -> None:
    holder = hold(tmp_path)
    threading.Timer(0.2, os.close, (holder,)).start()
    with fs.StateLock(str(tmp_path)) as lock:
        assert lock.given_up == ""
        probe = os.open(tmp_path, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # really held now
        finally:
            os.close(probe)


def test_go_depth_decoding_and_deep_encoding() -> None:
    deep = "[" * 5000 + '"\\ud800"' + "]" * 5000
    with pytest.raises(JSONError, match="nested too deeply"):
        gojson.loads(deep)  # envelopes keep the fast scanner's limit
    value = gojson.loads(deep, go_depth=True)
    assert gojson.dumps(value) == "[" * 5000 + '"\ufffd"' + "]" * 5000  # as Go writes it back
    assert gojson.loads("[" * 10_000 + "]" * 10_000, go_depth=True) is not None
    with pytest.raises(JSONError, match="exceeded max depth of 10000"):
        gojson.loads("[" * 10_001 + "]" * 10_001, go_depth=True)
    for bad in ("[1,]", "[01]", "[1.]", '{"a" 1}', "[1] x", "[NaN]", "["):
        with pytest.raises(JSONError):
            gojson.loads("[" * 2000 + bad + "]" * 2000, go_depth=True)


def test_the_iterative_encoder_writes_what_the_recursive_one_does() -> None:
    value = {"b": [1.5, {"<": None, "a": [True, False, "x\u2028"]}, []], "a": {}, "c": -0.0}
    for indent in (None, "  "):
        out: list[str] = []
        gojson._encode_deep(value, out, indent)
        assert "".join(out) == gojson.dumps(value, indent=indent)


def test_console_escapes_controls_and_cuts_long_values() -> None:
    assert console.escape_controls("a\nb\r\x1b[1m\x7f\x9b\u2028é") == "a\\nb\\r\\x1b[1m\\x7f\\u009b\\u2028é"
    assert console.cut("x" * 100) == "x" * 100
    assert console.cut("x" * 101) == "x" * 100 + "..."
    assert console.cut("é" * 60) == "é" * 50 + "..."  # bytes, as Go counts


def test_write_stderr_never_blocks_on_a_full_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        while True:
            os.write(write_end, b"x" * 65536)
    except BlockingIOError:
        pass
    os.set_blocking(write_end, True)
    monkeypatch.setattr("sys.stderr", open(write_end, "w", closefd=False))  # noqa: SIM115
    try:
        started = time.monotonic()
        console.write_stderr("dropped\n", wait=0.2)
        assert 0.15 < time.monotonic() - started < HANG_BOUND
    finally:
        os.close(read_end)
        os.close(write_end)
