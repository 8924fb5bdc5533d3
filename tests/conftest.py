"""Shared helpers: run the real `sciontool` in a throwaway HOME, or call its modules in-process
with HOME pointed at one; a real HTTP hub on 127.0.0.1; events and log lines."""

from __future__ import annotations

import http.server
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from hostile_machine import Machine, RawServer, new_machine

from sciontool_py.event import CanonicalEvent

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
# The environment that changes what the hook does; no test may inherit it from the caller.
SCION_VARIABLES = (
    "SCION_DIALECTS_PATH",
    "SCION_HUB_ENDPOINT",
    "SCION_HUB_URL",
    "SCION_AGENT_ID",
    "SCION_AUTH_TOKEN",
    "SCION_MAX_TURNS",
    "SCION_MAX_MODEL_CALLS",
    "SCION_LOG_LEVEL",
    "SCION_DEBUG",
    "SCION_TELEMETRY_ENABLED",
    "SCION_OTEL_GRPC_PORT",
    "SCION_OTEL_HTTP_PORT",
    "SCION_USAGE_SOURCE",
    "SCION_MODEL",
    "SCION_HARNESS",
    "SCION_PROJECT_ID",
    "SCION_AGENT_SLUG",
    "SCION_BROKER_NAME",
    "SCION_GCP_PROJECT_ID",
    "SCION_NATIVE_TELEMETRY_POLICY",
    "SCION_TELEMETRY_FILTER_INCLUDE",
    "SCION_TELEMETRY_FILTER_EXCLUDE",
    "SCION_TELEMETRY_REDACT",
    "SCION_TELEMETRY_HASH",
    # `sciontool run`'s marks on the hooks inside it: the suite may itself run under one.
    "SCIONTOOL_RUN",
    "SCIONTOOL_RUN_NAME",
    # The standard OpenTelemetry variables the telemetry reads (docs/telemetry.md).
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    *(
        f"OTEL_EXPORTER_OTLP_{signal}{setting}"
        for signal in ("", "TRACES_", "LOGS_", "METRICS_")
        for setting in ("ENDPOINT", "PROTOCOL", "HEADERS", "TIMEOUT")
    ),
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SERVICE_NAME",
)
# Under xdist, tests that assert how long something takes, and the test that floods both
# cores with 200 processes, share one worker: run side by side, the flood would push the
# others past their bounds. The rest of the suite runs on the other workers meanwhile.
TIMED = pytest.mark.xdist_group("timed")
# A wall-clock bound that only a hang fails: the adversaries of the tests that use it hold for
# 30 s or more (or forever), while a loaded 2-core machine finishes far inside it. The bound
# the code promises is asserted as a lower bound, by what happened (attempts, lines), or in
# CPU time; speed itself is `make bench`'s business.
HANG_BOUND = 20.0
# One agent.log line as Scion's tools write it: a UTC RFC 3339 stamp (Go's RFC3339Nano).
LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z \[sciontool\] \[(?P<level>[A-Z]+)\]"
    r"(?: \[(?P<tag>[^]]+)\])? (?P<msg>.*)$"
)


def _refuse_foreign_groups() -> None:
    """The suite runs as root beside other work: a signal to init's group, to every process
    (kill -1) or to the suite's own group would take them down. Refuse it, in every worker."""
    real_killpg, real_kill = os.killpg, os.kill

    def killpg(group: int, sig: int) -> None:
        if group <= 1 or group == os.getpgrp():
            raise AssertionError(f"refused: signal {sig} to process group {group}")
        real_killpg(group, sig)

    def kill(pid: int, sig: int) -> None:
        if pid <= 1 and sig != 0:
            raise AssertionError(f"refused: signal {sig} to pid {pid}")
        real_kill(pid, sig)

    os.killpg, os.kill = killpg, kill


def pytest_configure(config: pytest.Config) -> None:
    _refuse_foreign_groups()
    try:  # make test-floor runs the CLI smoke tests with pytest alone
        from hypothesis import HealthCheck, settings
    except ImportError:
        return
    # Hypothesis's too_slow check times input generation, which a loaded machine slows; its
    # example database would be written into the checkout.
    settings.register_profile("suite", suppress_health_check=[HealthCheck.too_slow], database=None)
    settings.load_profile("suite")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A resident helper started by a hook whose environment a test built from scratch stays for
    the HOME's next session (SCIONTOOL_HELPER_LINGER, 300 s) after the suite: removing the lock
    files in this session's own temp folders ends each within a second (its documented exit)."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    for lock in factory.getbasetemp().glob("**/.scion/exit-watcher.lock"):
        try:
            lock.unlink()
        except OSError:
            pass  # gone meanwhile, or a folder a hostile test planted there: no helper holds it


@pytest.fixture(autouse=True)
def fallback_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Scion's /tmp/agent.log and /tmp/scion-limits-exceeded, moved into this test's folder for
    every process it starts: the suite never writes to (or deletes from) the machine's /tmp."""
    folder = tmp_path_factory.mktemp("shared-tmp")  # beside tmp_path: tests may assert it is empty
    monkeypatch.setenv("SCIONTOOL_FALLBACK_DIR", str(folder))
    # And a HOME of its own for whatever a test starts without choosing one: the dialect
    # cache, pip's cache and rustup's settings (pip asks rustc its version) land there.
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    # A hook under pytest takes the test's process for its harness, which lives as long as the
    # suite: an exit watcher per test HOME would wait that long. The watcher's own tests (and
    # those that need one) turn it on.
    monkeypatch.setenv("SCIONTOOL_EXIT_WATCH", "off")
    # Where a test turns the watcher on, it leaves with the test's last agent, as inside Scion;
    # the tests of the helper's stay outside Scion set their own.
    monkeypatch.setenv("SCIONTOOL_HELPER_LINGER", "0")
    return folder


def event(name: str, raw_name: str = "", dialect: str = "core-agent", **data: object) -> CanonicalEvent:
    """A canonical event as a dialect would produce it (raw name defaults to the name)."""
    return CanonicalEvent(name, raw_name or name, dialect, data, {})


def log_entries(home: Path) -> list[tuple[str, str | None, str]]:
    """(level, tag or None, message) of each agent.log line in home; [] when there is no log."""
    path = home / "agent.log"
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(errors="surrogateescape").splitlines():
        match = LOG_LINE.match(line)
        assert match, f"not an agent.log line: {line!r}"
        entries.append((match["level"], match["tag"], match["msg"]))
    return entries


def read_info(home: Path) -> dict[str, object]:
    return json.loads((home / "agent-info.json").read_text())  # type: ignore[no-any-return]


def sciontool(
    *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real command, text in and out."""
    return subprocess.run(
        [sys.executable, "-m", "sciontool_py", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


class Ran:
    """What a command did, in the shape of subprocess.CompletedProcess (text)."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


CliHere = Callable[..., Ran]


@pytest.fixture
def cli_here(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CliHere:
    """`sciontool ARGS` through the typer app in this process: `cli_here(*args, stdin="")`.

    For tests of what a command does; the process boundary itself is proven with `sciontool()`.
    """
    from sciontool_py import cli

    def run(*args: str, stdin: str = "") -> Ran:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        capsys.readouterr()
        code = cli.run(list(args))
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


class Agent:
    """A temp HOME with the sciontool command pointed at it."""

    def __init__(self, home: Path, cache: Path) -> None:
        self.home = home
        self.env = {
            **os.environ,
            "HOME": str(home),
            "SCIONTOOL_CACHE_DIR": str(cache),
        }
        for name in SCION_VARIABLES:
            self.env.pop(name, None)

    def run(
        self, *args: str, stdin: bytes | str | Mapping[str, object] = b"", **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        if isinstance(stdin, Mapping):
            stdin = json.dumps(stdin)
        if isinstance(stdin, str):
            stdin = stdin.encode()
        return subprocess.run(
            [sys.executable, "-m", "sciontool_py", *args],
            input=stdin,
            capture_output=True,
            env={**self.env, **env},
            timeout=60,
        )

    def start_hook(self, *args: str) -> subprocess.Popen[bytes]:
        """`sciontool hook ARGS` started with pipes on stdin, stdout and stderr: the test writes."""
        return subprocess.Popen(
            [sys.executable, "-m", "sciontool_py", "hook", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env,
        )

    def hook(
        self, envelope: Mapping[str, object] | str | bytes, *args: str, **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        return self.run("hook", *args, stdin=envelope, **env)

    # Read without HOME's state lock, as Scion's readers do: once a hook has returned, relayed
    # or not, these files hold its event (Scion's contract).
    @property
    def info(self) -> dict[str, object]:
        return json.loads((self.home / "agent-info.json").read_text())

    @property
    def log_lines(self) -> list[str]:
        path = self.home / "agent.log"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    if os.path.isdir("/home/scion"):
        pytest.skip("/home/scion exists: Scion's rule sends agent.log there")
    home = tmp_path / "home"
    home.mkdir()
    return Agent(home, tmp_path / "cache")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp HOME for in-process calls: the environment of the `agent` fixture, in this process."""
    if os.path.isdir("/home/scion"):
        pytest.skip("/home/scion exists: Scion's rule sends agent.log there")
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("SCIONTOOL_CACHE_DIR", str(tmp_path / "cache"))
    for name in SCION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return folder


@pytest.fixture
def in_scion(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The `home` fixture as inside a Scion container (SCION_AGENT_ID set): one agent, whose state
    is the files in HOME (agent-info.json, agent-sessions.json), never a per-agent record."""
    monkeypatch.setenv("SCION_AGENT_ID", "agent-under-test")
    return home


class HubRequest:
    def __init__(self, path: str, headers: dict[str, str], body: bytes) -> None:
        self.path = path
        self.headers = headers
        self.body = body
        self.at = time.monotonic()


class HubServer(http.server.ThreadingHTTPServer):
    """A Scion hub on 127.0.0.1: answers each POST with the next status of `replies` (the last
    repeats), `delay` seconds after reading it."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _HubHandler)
        self.replies = [200]
        self.delay = 0.0
        self.requests: list[HubRequest] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _HubHandler(http.server.BaseHTTPRequestHandler):
    server: HubServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        hub = self.server
        hub.requests.append(HubRequest(self.path, dict(self.headers.items()), body))
        time.sleep(hub.delay)
        code = hub.replies[min(len(hub.requests), len(hub.replies)) - 1]
        # A careless hub echoes the credential it was sent: the client must redact it.
        reply = json.dumps({"error": "no", "token": self.headers.get("X-Scion-Agent-Token")}).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    """Raw servers on 127.0.0.1 a test starts (hostile_machine.RawServer), closed after it."""
    started: list[RawServer] = []
    yield started
    for server in started:
        server.close()


@pytest.fixture
def hub() -> Iterator[HubServer]:
    server = HubServer()
    # A short poll: shutdown() waits for the loop to notice, once per test.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def machine() -> Iterator[Machine]:
    """A hostile machine (see hostile_machine.py): HOME outside /tmp, a private /tmp when root."""
    if os.path.isdir("/home/scion"):
        pytest.skip("/home/scion exists: Scion's rule sends agent.log there")
    yield from new_machine()


def wired(command: str) -> str:
    """A hook's shell command line as `harness install` writes it: the shell relay before it, on
    Linux with bash (sciontool_py/helper/relay.bash)."""
    from sciontool_py.harness.program import relay_prefix

    relay = relay_prefix()
    return f"{relay} {command}" if relay else command


def wired_in_bash(command: str) -> str:
    """A hook's shell command line as `harness install` writes it for a harness that runs its hooks
    with `bash -c` (Codex): that bash reads the relay itself, any other shell starts the relay's."""
    import shlex

    from sciontool_py.harness.program import relay_prefix

    relay = relay_prefix()
    if not relay:
        return command
    script = shlex.quote(shlex.split(relay)[1])
    return f'[ -n "${{BASH_VERSION-}}" ] && . {script} {command} || exec {relay} {command}'


def wired_notify(*argv: str) -> str:
    """Codex's notify line as `harness install` writes it for ARGV: through the shell relay too."""
    import shlex

    from sciontool_py.harness.program import relay_prefix

    words = [*shlex.split(relay_prefix()), *argv]
    return "notify = [" + ", ".join(json.dumps(word) for word in words) + "]"
