"""A hostile machine for the hook: a HOME an attacker fills, a private /tmp, and the checks every case makes.

Each case runs the real `sciontool` with HOME outside /tmp. When the tests run
as root (CI does) the command runs in a private mount namespace whose /tmp is
a folder of the case's own, so a FIFO or link planted at /tmp/agent.log or
/tmp/scion-limits-exceeded touches no other process, and what the hook wrote
there can be checked; without root those cases are skipped.

Every run asserts what holds in every case: the command returns (within
RETURN_WITHIN, the hang bound), exits 0 or 1 (never 2), prints no traceback or internal error, and no
secret reaches stdout or stderr.  `settled()` asserts the rest: the state
files are JSON objects with no seeded key lost, no temp file is left,
nothing outside HOME changed and no secret was copied into HOME.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import pytest

SCIONTOOL = Path(sys.executable).with_name("sciontool")
# The hang bound: every adversary here holds the hook for 60 s or forever, so a hook that
# does not give up fails it, while a loaded 2-core machine stays far inside it. The bound
# the code promises (its lock wait, its hub budget) is asserted per case, as a lower bound
# or in CPU time.
RETURN_WITHIN = 30.0
SECRET = "hostile-secret-5d1f0c9e7b"
TOKEN = "tok-hostile-9a8b7c6d5e4f3a21"
SEED = {"keep": "me", "phase": "running", "activity": "thinking"}
REPO = Path(__file__).resolve().parent.parent


def _kept_under_tmp() -> list[str]:
    """The folders right under /tmp that the command itself lives in (a clean clone in /tmp,
    its venv): bound into the private /tmp at the same place, so covering /tmp hides no code."""
    kept = set()
    for path in (REPO, Path(sys.prefix), Path(sys.base_prefix), SCIONTOOL.parent):
        resolved = path.resolve()
        if resolved.is_relative_to("/tmp") and resolved != Path("/tmp"):
            kept.add(resolved.relative_to("/tmp").parts[0])
    return sorted(kept)


KEPT_IN_TMP = _kept_under_tmp()
_ISOLATE = (
    "".join(
        f'mkdir -p "$HOSTILE_TMP"/{shlex.quote(name)} && '
        f'mount --bind /tmp/{shlex.quote(name)} "$HOSTILE_TMP"/{shlex.quote(name)} && '
        for name in KEPT_IN_TMP
    )
    + 'mount --rbind "$HOSTILE_TMP" /tmp || exit 97; '
)
# Peak RSS needs a small parent: a child forked from pytest starts with pytest's high-water mark.
_MEASURE = """\
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
"""
_probe: list[bool] = []


def _measured(path: Path | None) -> tuple[int, float]:
    if path is None:
        return 0, 0.0
    peak, cpu = path.read_text().split()
    return int(peak), float(cpu)


def private_tmp() -> bool:
    """Whether a command can run with a private /tmp here (root, and mount namespaces allowed)."""
    if not _probe:
        unshare = shutil.which("unshare")
        ok = False
        if os.geteuid() == 0 and unshare and os.path.isdir("/var/tmp"):
            with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:
                Path(folder, ".private").touch()
                probe = subprocess.run(
                    [unshare, "-m", "sh", "-c", _ISOLATE + "test -e /tmp/.private"],
                    env={**os.environ, "HOSTILE_TMP": folder},
                    capture_output=True,
                    timeout=30,
                )
                ok = probe.returncode == 0
        _probe.append(ok)
    return _probe[0]


class Run:
    def __init__(
        self, returncode: int, stdout: bytes, stderr: bytes, elapsed: float, measured: tuple[int, float]
    ) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed
        # Measured only when started with measure=True: peak RSS, and CPU seconds (user +
        # system), which load on the machine does not change.
        self.peak_mib = measured[0] / 1024
        self.cpu = measured[1]

    @property
    def error(self) -> str:
        """The last stderr line (the one-line error of a failed call)."""
        lines = self.stderr.decode("utf-8", "replace").splitlines()
        return lines[-1] if lines else ""


class Started:
    def __init__(
        self, proc: subprocess.Popen[bytes], out: Path, err: Path | None, peak: Path | None, at: float
    ) -> None:
        self.proc = proc
        self.out = out
        self.err = err
        self.peak = peak
        self.at = at


class Machine:
    """One case's world: HOME (seeded with SEED), a private /tmp, and files outside HOME to protect."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home"
        self.home.mkdir()
        self.tmp = base / "tmp"  # /tmp, as the command sees it
        self.tmp.mkdir()
        self.tmp.chmod(0o1777)
        self.outside = base / "outside"  # what links planted in HOME point at
        self.outside.mkdir()
        self.secret_file = self.outside / "secret.json"
        self.secret_file.write_text(json.dumps({"secret": SECRET, "keep": "outside"}))
        self.secret_file.chmod(0o600)
        self.cache = base / "cache"
        self.runs = base / "runs"
        self.runs.mkdir()
        self.isolated = private_tmp()
        self.mounts: list[Path] = []
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SCION_", "XDG_"))
            and "proxy" not in k.lower()
            and k != "SCIONTOOL_FALLBACK_DIR"  # the case's private /tmp is the real path here
        }
        self.env.update(HOME=str(self.home), SCIONTOOL_CACHE_DIR=str(self.cache), HOSTILE_TMP=str(self.tmp))
        self.seed()

    def seed(self, info: Mapping[str, object] | None = None) -> None:
        (self.home / "agent-info.json").write_text(json.dumps(info or SEED, indent=2))
        self.protect()

    def protect(self) -> None:
        """Take what is outside HOME now as what must not change."""
        self.outside_before = _snapshot(self.outside)

    def need_private_tmp(self) -> None:
        if not self.isolated:
            pytest.skip("needs root and mount namespaces for a private /tmp (CI has both)")

    def mount_tmpfs(self, where: Path, kib: int) -> None:
        """A real tmpfs of kib KiB at where (root only): a disk that fills up."""
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root (CI runs as root)")
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(where)], check=True)
        self.mounts.append(where)

    def start(
        self,
        stdin: Mapping[str, object] | bytes,
        *args: str,
        command: str = "hook",
        redirect: str = "",
        stderr: int | None = None,
        measure: bool = False,
        **env: str,
    ) -> Started:
        """Start `sciontool COMMAND ARGS` with stdin; redirect is a shell redirection such as `2>&-`.

        With measure, the run's peak RSS and CPU time are measured (through a small parent process).
        """
        data = json.dumps(stdin).encode() if not isinstance(stdin, bytes) else stdin
        n = len(list(self.runs.iterdir()))
        stdin_file = self.runs / f"{n}.in"
        stdin_file.write_bytes(data)
        out = self.runs / f"{n}.out"
        err = None if stderr is not None else self.runs / f"{n}.err"
        script = (_ISOLATE if self.isolated else "") + f'exec "$@" {redirect}'
        argv = ["sh", "-c", script, "sh", str(SCIONTOOL), command, *args]
        if self.isolated:
            argv = ["unshare", "-m", *argv]
        peak = self.runs / f"{n}.peak" if measure else None
        if peak is not None:
            argv = [sys.executable, "-c", _MEASURE, str(peak), *argv]
        if err is not None:
            err.write_bytes(b"")
        with open(stdin_file, "rb") as fin, open(out, "wb") as fout, open(err or os.devnull, "ab") as ferr:
            proc = subprocess.Popen(
                argv,
                stdin=fin,
                stdout=fout,
                stderr=ferr if stderr is None else stderr,
                env={**self.env, **env},
            )
        return Started(proc, out, err, peak, time.monotonic())

    def wait(self, started: Started, within: float = RETURN_WITHIN) -> Run:
        """Wait for the command (killing it past 60 s, or within if longer) and make the checks
        every run makes; within is the hang bound, longer only for work bound by CPU."""
        try:
            started.proc.wait(max(60, within))
        except subprocess.TimeoutExpired:
            started.proc.kill()
            started.proc.wait()
        elapsed = time.monotonic() - started.at
        run = Run(
            started.proc.returncode,
            started.out.read_bytes(),
            started.err.read_bytes() if started.err else b"",
            elapsed,
            _measured(started.peak),
        )
        assert run.returncode != 97, "the private /tmp could not be mounted"
        assert elapsed < within, f"returned after {elapsed:.1f}s"
        assert run.returncode in (0, 1), run.stderr
        for output in (run.stdout, run.stderr):
            assert b"Traceback" not in output and b"internal error" not in output, output[-2000:]
            assert SECRET.encode() not in output and TOKEN.encode() not in output
        return run

    def run(
        self,
        stdin: Mapping[str, object] | bytes,
        *args: str,
        within: float = RETURN_WITHIN,
        **options: object,
    ) -> Run:
        return self.wait(self.start(stdin, *args, **options), within)  # type: ignore[arg-type]

    def hook(self, stdin: Mapping[str, object] | bytes, *args: str, **options: object) -> Run:
        return self.run(stdin, "--dialect=core-agent", *args, **options)

    def settled(self, keys: Iterable[str] = ("keep",), planted: Iterable[str] = ()) -> dict[str, object]:
        """The checks after a case: agent-info.json (returned) and every other state file are sound."""
        info = _json((self.home / "agent-info.json").read_bytes())
        assert isinstance(info, dict)
        assert set(keys) <= set(info), info
        limits = self.home / "agent-limits.json"
        if limits.is_file() and not limits.is_symlink():
            assert isinstance(_json(limits.read_bytes()), dict)
        assert _snapshot(self.outside) == self.outside_before, "something outside HOME changed"
        token_file = self.home / ".scion" / "scion-token"
        for path in _files(self.home):
            if path.name in set(planted):
                continue
            assert not path.name.endswith(".tmp"), f"temp file left: {path}"
            if path != token_file:
                data = path.read_bytes()
                assert SECRET.encode() not in data and TOKEN.encode() not in data, path
        return info

    def log(self) -> list[str]:
        """agent.log's messages (after the timestamp)."""
        path = self.home / "agent.log"
        if not path.is_file() or path.is_symlink():
            return []
        lines = path.read_text(errors="replace").splitlines()
        return [line.split(" [sciontool] ", 1)[1] for line in lines if " [sciontool] " in line]

    def tmp_names(self) -> set[str]:
        """What the command left in its /tmp."""
        return {p.name for p in self.tmp.iterdir()} - set(KEPT_IN_TMP)

    def close(self) -> None:
        for where in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(where)], check=False)


def _json(data: bytes) -> object:
    """Parse as Go would: state files may nest up to 10 000 levels, beyond json's default limit."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(25_000)
    try:
        return json.loads(data)
    finally:
        sys.setrecursionlimit(limit)


def _files(root: Path) -> Iterator[Path]:
    """Regular files under root, never following a link."""
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if path.is_file() and not path.is_symlink():
                yield path


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every entry under root: its mode and content (a link's target, a file's bytes)."""
    out: dict[str, tuple[int, bytes]] = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder, name)
            st = path.lstat()
            if path.is_symlink():
                content = os.readlink(path).encode()
            elif path.is_file():
                content = path.read_bytes()
            else:
                content = b""
            out[str(path.relative_to(root))] = (st.st_mode, content)
    return out


def new_machine() -> Iterator[Machine]:
    base = Path(tempfile.mkdtemp(prefix="sciontool-hostile-", dir="/var/tmp" if private_tmp() else None))
    machine = Machine(base)
    try:
        yield machine
    finally:
        machine.close()
        shutil.rmtree(base, ignore_errors=True)


class RawServer:
    """A real TCP server on 127.0.0.1 that hands each request to respond(conn, request).

    respond writes whatever bytes it likes (a redirect, a trickle, garbage);
    every request's raw bytes are kept in requests.
    """

    def __init__(self, respond: Callable[[socket.socket, bytes], None]) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.respond = respond
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                request = _read_request(conn)
                self.requests.append(request)
                self.respond(conn, request)
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(request_headers(data).get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def request_headers(request: bytes) -> dict[str, str]:
    """A raw request's headers, names lower-cased."""
    head = request.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    return {name.strip().lower(): value.strip() for name, _, value in (h.partition(":") for h in head)}


def answer(
    status: str, body: bytes = b"", headers: tuple[str, ...] = ()
) -> Callable[[socket.socket, bytes], None]:
    """A responder sending one complete HTTP/1.1 reply."""

    def respond(conn: socket.socket, request: bytes) -> None:
        lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close", *headers]
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    return respond


def one_error(ran: subprocess.CompletedProcess[bytes], command: str) -> str:
    """The one line `sciontool harness COMMAND` refused with (exit 1, no traceback)."""
    assert ran.returncode == 1, ran
    lines = ran.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"sciontool harness {command}: "), lines
    assert "internal error" not in lines[0] and "Traceback" not in lines[0]
    return lines[0]
