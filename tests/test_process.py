"""process.py's reading of /proc, against real processes: what a hook's turn and its harness are
found by."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from sciontool_py import process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")

# A harness-like parent: each of its threads starts a child of its own, then all wait.
THREADED = """
import subprocess, sys, threading
started = []
def run():
    started.append(subprocess.Popen(["sleep", "60"]))
threads = [threading.Thread(target=run) for _ in range(int(sys.argv[1]))]
for t in threads: t.start()
for t in threads: t.join()
print(" ".join(str(p.pid) for p in started), flush=True)
sys.stdin.read()
for p in started: p.kill(); p.wait()
"""


def test_a_command_line_past_a_page_is_read_whole_up_to_its_limit() -> None:
    filler = ["x" * 1000] * 100  # 100 KB of arguments: /proc gives them a page at a time
    code = "import time; print(flush=True); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code, *filler], stdout=subprocess.PIPE)
    try:
        # Running its code: past exec, which reads an empty command line until it sets one up.
        assert child.stdout is not None and child.stdout.readline() == b"\n"
        listed = process.cmdline(child.pid)
        assert len(listed) == 64 << 10
        assert listed.startswith(sys.executable.encode() + b"\0-c\0" + code.encode() + b"\0")
        assert listed.count(b"x" * 1000) >= 60  # far past the first page of 4 KiB
    finally:
        child.kill()
        child.wait()


def test_the_children_of_every_thread_are_found_and_a_gone_process_has_none() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", THREADED, "12"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        started = {int(pid) for pid in parent.stdout.readline().split()}
        assert len(started) == 12
        assert set(process.children(parent.pid)) == started
        found = process.stat(parent.pid)
        assert found is not None and found[0].startswith(b"python") and found[2] > 1
    finally:
        assert parent.stdin is not None
        parent.stdin.close()
        parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while process.stat(parent.pid) is not None and time.monotonic() < deadline:
        time.sleep(0.01)  # reaped by wait(): its /proc entry goes with it
    assert process.children(parent.pid) == []
    assert process.stat(parent.pid) is None
    assert process.cmdline(parent.pid) == b""
