"""`sciontool doctor` against real set-ups: harnesses wired by `harness install` in a temp project
and HOME, a real `sciontool` (and impostors) on PATH, dialects on disk, a TCP listener for the
telemetry endpoint and hubs on 127.0.0.1 (a good one, one that never answers, trickles or
redirects). Each case: its line, its exit code, nothing else written, the token never shown."""

from __future__ import annotations

import base64
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent, CliHere, HubServer, Ran
from hostile_machine import RawServer, answer

from sciontool_py import __version__
from sciontool_py.dialect.load import packaged_dir
from sciontool_py.doctor import hooks
from sciontool_py.harness.program import relay_prefix

TOKEN_SECRET = "sig-9f8e7d6c5b4a"
BAD_YAML = "name: claude\nmappings: [unclosed\n"


def jwt(exp: float) -> str:
    """A token shaped as Scion's hub mints them; its signature is never checked by doctor."""

    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256'})}.{part({'sub': 'agent-7', 'exp': int(exp)})}.{TOKEN_SECRET}"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: nothing listens there


def write_program(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def project(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder; a real `sciontool` (this checkout's) on PATH; telemetry off unless a
    test turns it on (so no test depends on what listens on this machine's 4317)."""
    folder = tmp_path / "project"
    folder.mkdir()
    bin_dir = tmp_path / "bin"
    write_program(bin_dir, "sciontool", f'exec {sys.executable} -m sciontool_py "$@"')
    # The shell relay beside it, as a sciontool-py install puts it: a project's lines find it there.
    (bin_dir / "sciontool-relay").symlink_to(Path(sys.executable).parent / "sciontool-relay")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("SCION_TELEMETRY_ENABLED", "false")
    return folder


def lines(out: str) -> list[str]:
    return out.splitlines()


def install(cli_here: CliHere, *args: str) -> None:
    ran = cli_here("harness", "install", *args)
    assert ran.returncode == 0, ran.stderr


def test_a_working_install_is_all_ok_and_writes_nothing(cli_here: CliHere, project: Path, home: Path) -> None:
    install(cli_here, "claude", "--project", str(project))
    before = sorted(p.name for p in home.iterdir())
    ran = cli_here("doctor", "--project", str(project))
    assert (ran.returncode, ran.stderr) == (0, "")
    settings = project / ".claude" / "settings.json"
    bin_dir = project.parent / "bin"
    assert lines(ran.stdout) == [
        f"ok    claude: wired in {settings} (15 hooks)",
        f"ok    claude: `sciontool` is {bin_dir}/sciontool (on the current PATH)",
        *(
            [
                f"ok    claude: the shell relay `sciontool-relay` is {bin_dir}/sciontool-relay (on the current PATH)"
            ]
            if relay_prefix()
            else []
        ),
        f"ok    claude: `sciontool --version` runs: sciontool {__version__}",
        f"ok    claude: dialect claude is valid ({packaged_dir()}/claude/dialect.yaml)",
        f"ok    state folder: {home} writable (a temp file written, synced and removed)",
        "ok    telemetry: off (SCION_TELEMETRY_ENABLED=false): the hook exports nothing",
        "ok    hub: none configured (SCION_HUB_ENDPOINT unset): the hook reports to no hub",
        f"{7 + bool(relay_prefix())} checks, all ok",
    ]
    assert sorted(p.name for p in home.iterdir()) == before  # the write test left nothing


def test_a_command_missing_from_path_fails_with_the_reinstall_fix(
    cli_here: CliHere, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(cli_here, "claude", "--user")
    relayed = bool(relay_prefix())  # found on the PATH install ran with
    empty = project.parent / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    ran = cli_here("doctor", "--user")
    assert ran.returncode == 1
    this = f"{sys.executable} -m sciontool_py"
    assert (
        f"FAIL  claude: `sciontool` is not on the current PATH ({empty}); fix: reinstall with "
        f"`{this} harness install claude --user --command '{this}'`"
    ) in lines(ran.stdout)
    assert not any("--version" in line for line in lines(ran.stdout))  # nothing to run
    assert lines(ran.stdout)[-1] == f"{6 + relayed} checks, 1 failed"


def test_a_project_wiring_without_sciontool_on_path_says_its_hooks_do_nothing(
    cli_here: CliHere, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project's lines exit 0 without a word where PATH lacks sciontool: doctor says why nothing
    is reported, and points at PATH, not at a reinstall naming this machine's paths."""
    install(cli_here, "claude", "--project", str(project))
    empty = project.parent / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 1
    here = Path(sys.executable).parent  # this doctor runs as `python -m sciontool_py`
    assert (
        f"FAIL  claude: `sciontool` is not on the current PATH ({empty}): the project's hooks look for "
        "it there when they run and, without it, exit 0 without a word, so nothing is reported; fix: "
        f"put the folder that holds it on that PATH (this sciontool's: {here})"
    ) in lines(ran.stdout)
    assert lines(ran.stdout)[-1] == "6 checks, 1 failed"


def test_the_path_claudes_settings_set_is_the_one_checked(
    cli_here: CliHere, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's `env.PATH` replaces the inherited PATH for its hooks: the shell's PATH may
    find sciontool while the harness will not, and the other way round."""
    install(cli_here, "claude", "--project", str(project))
    bin_dir = project.parent / "bin"
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"env": {"PATH": "/nowhere"}}))
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 1
    assert (
        f"FAIL  claude: `sciontool` is not on the PATH {local} sets in its env (/nowhere): the project's "
        "hooks look for it there" in ran.stdout
    )
    local.write_text(json.dumps({"env": {"PATH": str(bin_dir)}}))
    monkeypatch.setenv("PATH", "/nowhere")
    ran = cli_here("doctor", "--project", str(project))
    assert (ran.returncode, ran.stderr) == (0, "")
    assert (
        f"ok    claude: `sciontool` is {bin_dir}/sciontool (on the PATH {local} sets in its env)"
        in ran.stdout
    )


def test_a_dialect_shadowed_by_a_broken_file_on_scion_dialects_path_fails(
    cli_here: CliHere, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(cli_here, "claude", "--project", str(project))
    shadow = project.parent / "dialects"
    (shadow / "claude").mkdir(parents=True)
    (shadow / "claude" / "dialect.yaml").write_text(BAD_YAML)
    monkeypatch.setenv("SCION_DIALECTS_PATH", str(shadow))
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 1
    [line] = [line for line in lines(ran.stdout) if "claude: dialect " in line]
    assert line.startswith(f"FAIL  claude: dialect claude: {shadow}/claude/dialect.yaml:")
    assert line.endswith(
        f"; fix: `sciontool dialect list` shows each file the name may mean (SCION_DIALECTS_PATH={shadow}) "
        "and its problem"
    )
    assert not (project.parent / "cache").exists()  # doctor writes no dialect cache


def test_a_broken_dialect_file_the_hook_names_fails_relative_to_the_project(
    cli_here: CliHere, project: Path
) -> None:
    (project / ".claude").mkdir()
    hook = {"type": "command", "command": "sciontool hook --dialect-file my/dialect.yaml"}
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}}))
    (project / "my").mkdir()
    (project / "my" / "dialect.yaml").write_text(BAD_YAML)
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 1
    [line] = [line for line in lines(ran.stdout) if "claude: dialect " in line]
    assert line.startswith(f"FAIL  claude: dialect my/dialect.yaml: {project}/my/dialect.yaml:")
    assert line.endswith(
        f"; fix: `sciontool dialect check {project}/my/dialect.yaml` lists its problems: correct the file"
    )
    assert f"ok    claude: wired in {project}/.claude/settings.json (1 hook)" in ran.stdout
    assert not (project.parent / "cache").exists()  # doctor writes no dialect cache


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('echo "nope 1.0"', "`sciontool --version` printed 'nope 1.0', not sciontool's version"),
        ('echo "cannot start" >&2; exit 3', "`sciontool --version` failed (exit status 3): cannot start"),
        (
            "sleep 60 & sleep 60",
            "`sciontool --version` failed (timed out after 1s; killed it and every process it started)",
        ),
    ],
    ids=["an impostor", "a failing program", "a program that hangs"],
)
def test_a_program_that_is_not_a_working_sciontool_fails(
    cli_here: CliHere, project: Path, monkeypatch: pytest.MonkeyPatch, body: str, problem: str
) -> None:
    install(cli_here, "claude", "--project", str(project))
    write_program(project.parent / "bin", "sciontool", body)
    monkeypatch.setattr(hooks, "RUN_SECONDS", 1.0)
    started = time.monotonic()
    ran = cli_here("doctor", "--project", str(project))
    assert time.monotonic() - started < HANG_BOUND
    assert ran.returncode == 1
    assert any(
        line.startswith(f"FAIL  claude: {problem}; fix: reinstall with `") for line in lines(ran.stdout)
    ), ran.stdout


def test_every_installable_file_format_is_found(cli_here: CliHere, project: Path) -> None:
    """JSON settings (Copilot's own key), Codex's hooks.json and notify, the opencode bridge,
    Mistral Vibe's TOML block and Hermes' YAML block: each wired harness is one set of lines."""
    for name in ("codex", "copilot", "mistral-vibe", "hermes"):
        install(cli_here, name, "--user")
    install(cli_here, "opencode", "--project", str(project))
    user = cli_here("doctor", "--user")
    assert (user.returncode, user.stderr) == (0, ""), user.stdout
    wired = [line.split(":")[0] for line in lines(user.stdout) if ": wired in " in line]
    assert wired == ["ok    codex", "ok    copilot", "ok    mistral-vibe", "ok    hermes"]
    assert ".codex/hooks.json, " in user.stdout and ".codex/config.toml (" in user.stdout
    assert user.stdout.count(f"--version` runs: sciontool {__version__}") == 4
    in_project = cli_here("doctor", "--project", str(project))
    assert in_project.returncode == 0
    assert (
        f"ok    opencode: wired in {project}/.opencode/plugins/sciontool-bridge.js (1 hook)"
        in in_project.stdout
    )


def test_nothing_wired_fails_and_says_how_to_wire(cli_here: CliHere, project: Path) -> None:
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 1
    assert lines(ran.stdout)[0] == (
        f"FAIL  harnesses: none wired (--project {project}); fix: `sciontool harness install NAME --project {project}`"
    )


def test_an_unwritable_state_folder_fails(
    cli_here: CliHere, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(cli_here, "claude", "--project", str(project))
    gone = project.parent / "no-home"
    monkeypatch.setenv("HOME", str(gone))
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 1
    assert (
        f"FAIL  state folder: {gone} is not writable: No such file or directory; fix: make {gone} a folder "
        "this user can write (the hook keeps agent-info.json there)"
    ) in lines(ran.stdout)
    assert not gone.exists()


@pytest.mark.parametrize("plant", ["fifo", "symlink out", "not JSON"])
def test_a_planted_or_broken_settings_file_is_one_failure_and_no_hang(
    cli_here: CliHere, project: Path, plant: str
) -> None:
    (project / ".claude").mkdir()
    settings = project / ".claude" / "settings.json"
    if plant == "fifo":
        os.mkfifo(settings)
        expected = f"FAIL  claude: {settings}: not a regular file; left untouched; fix: repair it"
    elif plant == "not JSON":
        settings.write_text('{"hooks": {"Stop": [')
        expected = (
            f"FAIL  claude: {settings}: not valid JSON: Expecting value: line 1 column 21 (char 20); fix: "
        )
    else:
        outside = project.parent / "elsewhere.json"
        outside.write_text("{}")
        settings.symlink_to(outside)
        expected = (
            f"FAIL  claude: {settings} resolves to {outside}, outside {project}: not following the symlink"
        )
    started = time.monotonic()
    ran = cli_here("doctor", "--project", str(project))
    assert time.monotonic() - started < HANG_BOUND
    assert ran.returncode == 1
    assert lines(ran.stdout)[0].startswith(expected)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (an OTLP receiver's, as far as a connect sees)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield int(server.getsockname()[1])


def test_the_telemetry_endpoint_in_use_is_named_and_probed(
    cli_here: CliHere, project: Path, monkeypatch: pytest.MonkeyPatch, listener: int
) -> None:
    install(cli_here, "claude", "--project", str(project))
    monkeypatch.delenv("SCION_TELEMETRY_ENABLED")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{listener}")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 0
    assert [line for line in lines(ran.stdout) if "telemetry" in line[:16]] == [
        f"ok    telemetry: {signal} over http/protobuf to http://127.0.0.1:{listener}/v1/{signal} "
        "(OTEL_EXPORTER_OTLP_ENDPOINT): it accepts a connection"
        for signal in ("traces", "metrics")
    ]
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 1
    assert (
        "FAIL  telemetry: OTEL_TRACES_EXPORTER=zipkin is not supported (otlp, none): that signal is not "
        "exported; fix: set OTEL_TRACES_EXPORTER to otlp (or none: off)"
    ) in lines(ran.stdout)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER")
    refused = closed_port()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{refused}")
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 1
    failures = [line for line in lines(ran.stdout) if line.startswith("FAIL  telemetry:")]
    assert failures and all(
        f"(OTEL_EXPORTER_OTLP_ENDPOINT): nothing listens at 127.0.0.1:{refused}; fix: start the OTLP receiver, "
        "or correct OTEL_EXPORTER_OTLP_ENDPOINT" in line
        for line in failures
    )
    # Scion's default address outside Scion: nothing need listen there, so that is no failure.
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("SCION_OTEL_HTTP_PORT", str(refused))
    ran = cli_here("doctor", "--project", str(project))
    assert ran.returncode == 0
    assert (
        f"to http://127.0.0.1:{refused}/v1/traces (the default outside Scion): nothing listens" in ran.stdout
    )


def hub_env(monkeypatch: pytest.MonkeyPatch, home: Path, url: str, token: str) -> None:
    monkeypatch.setenv("SCION_HUB_ENDPOINT", url)
    monkeypatch.setenv("SCION_AGENT_ID", "agent-7")
    (home / ".scion").mkdir(exist_ok=True)
    (home / ".scion" / "scion-token").write_text(token + "\n")


def doctor_with_hub(
    cli_here: CliHere, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch, url: str, token: str
) -> Ran:
    """doctor on a claude install, with the hub at url and token as the agent's."""
    install(cli_here, "claude", "--project", str(project))
    hub_env(monkeypatch, home, url, token)
    return cli_here("doctor", "--project", str(project))


def hub_lines(out: str) -> list[str]:
    return [line for line in lines(out) if " hub" in line[:20]]


Gets = list[tuple[str, dict[str, str]]]


@pytest.fixture
def healthy(hub: HubServer) -> tuple[HubServer, Gets]:
    """The conftest hub, answering GET /healthz with 200 too (its POSTs as before), and the GETs
    it received: (path, headers)."""
    gets: Gets = []

    class WithHealth(hub.RequestHandlerClass):  # type: ignore[name-defined,misc]
        def do_GET(self) -> None:
            gets.append((self.path, dict(self.headers.items())))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    hub.RequestHandlerClass = WithHealth
    return hub, gets


def test_a_configured_hub_healthz_token_and_heartbeat(
    cli_here: CliHere,
    project: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    healthy: tuple[HubServer, Gets],
) -> None:
    server, gets = healthy
    token = jwt(time.time() + 3 * 3600 + 119)  # "3h 1m" for the next 59 s
    ran = doctor_with_hub(cli_here, project, home, monkeypatch, server.url, token)
    assert (ran.returncode, ran.stderr) == (0, "")
    found = hub_lines(ran.stdout)
    assert found[0].startswith("ok    hub token: from ~/.scion/scion-token expires at ")
    assert found[0].endswith("(in 3h 1m)")
    assert found[1:] == [
        f"ok    hub: {server.url}/healthz answered 200",
        "ok    hub heartbeat: POST /api/v1/agents/agent-7/status accepted the token",
    ]
    [(path, headers)] = gets
    assert path == "/healthz" and "X-Scion-Agent-Token" not in headers  # no token for /healthz
    [post] = server.requests
    assert (post.path, json.loads(post.body)) == ("/api/v1/agents/agent-7/status", {"heartbeat": True})
    assert post.headers["X-Scion-Agent-Token"] == token
    assert TOKEN_SECRET not in ran.stdout + ran.stderr


def test_an_expired_token_fails_and_is_never_printed(
    cli_here: CliHere,
    project: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    healthy: tuple[HubServer, Gets],
) -> None:
    server, _ = healthy
    server.replies = [401]  # and the hub echoes the token it was sent in its error body
    expired = jwt(time.time() - 2 * 86400 - 3600 - 30)
    ran = doctor_with_hub(cli_here, project, home, monkeypatch, server.url, expired)
    assert ran.returncode == 1
    found = hub_lines(ran.stdout)
    assert found[0].startswith("FAIL  hub token: from ~/.scion/scion-token expired at ")
    assert "(2d 1h ago); fix: a fresh token in ~/.scion/scion-token or SCION_AUTH_TOKEN" in found[0]
    assert found[2].startswith(
        "FAIL  hub heartbeat: POST /api/v1/agents/agent-7/status: hub returned error 401: "
        '{"error": "no", "token": "[redacted]"}; fix: check SCION_AGENT_ID and the token'
    )
    assert TOKEN_SECRET not in ran.stdout + ran.stderr


def test_an_unreachable_hub_fails_without_a_heartbeat(
    cli_here: CliHere, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    ran = doctor_with_hub(cli_here, project, home, monkeypatch, url, jwt(time.time() + 86400))
    assert ran.returncode == 1
    assert (
        f"FAIL  hub: cannot reach {url}/healthz: Connection refused; fix: start the hub, or correct SCION_HUB_ENDPOINT"
    ) in lines(ran.stdout)
    assert "heartbeat" not in ran.stdout


def never(conn: socket.socket, request: bytes) -> None:
    time.sleep(HANG_BOUND)


def trickle(conn: socket.socket, request: bytes) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 400:
        conn.sendall(bytes([byte]))
        time.sleep(0.25)


@pytest.mark.parametrize("behaviour", ["never answers", "trickles", "redirects"])
def test_a_hostile_hub_is_one_bounded_failure_and_the_token_goes_nowhere(
    cli_here: CliHere,
    project: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: list[RawServer],
    behaviour: str,
) -> None:
    install(cli_here, "claude", "--project", str(project))
    elsewhere = RawServer(answer("200 OK"))
    servers.append(elsewhere)
    respond = {
        "never answers": never,
        "trickles": trickle,
        "redirects": answer("302 Found", headers=(f"Location: {elsewhere.url}/steal",)),
    }[behaviour]
    server = RawServer(respond)  # type: ignore[arg-type]
    servers.append(server)
    hub_env(monkeypatch, home, server.url, jwt(time.time() + 86400))
    started = time.monotonic()
    ran = cli_here("doctor", "--project", str(project))
    assert time.monotonic() - started < HANG_BOUND
    assert ran.returncode == 1
    [line] = [line for line in lines(ran.stdout) if line.startswith("FAIL  hub:")]
    if behaviour == "redirects":
        assert line == (
            f"FAIL  hub: {server.url}/healthz answered 302, a redirect to {elsewhere.url}/steal (not followed); "
            "fix: point SCION_HUB_ENDPOINT at the hub itself, not at a sign-in proxy"
        )
    else:
        assert line.startswith(f"FAIL  hub: cannot reach {server.url}/healthz: no complete answer within 5s")
    assert "heartbeat" not in ran.stdout  # the token is sent only to a hub that answered
    assert elsewhere.requests == []
    assert all(b"X-Scion-Agent-Token" not in request for request in server.requests)


def test_doctor_in_a_real_process_is_one_line_per_check_and_exit_1(agent: Agent, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    assert (
        agent.run(
            "harness", "install", "claude", "--project", str(project), "--command", "sciontool"
        ).returncode
        == 0
    )
    ran = agent.run(
        "doctor", "--project", str(project), PATH=str(tmp_path / "nowhere"), SCION_TELEMETRY_ENABLED="false"
    )
    assert (ran.returncode, ran.stderr) == (1, b"")
    out = ran.stdout.decode()
    assert all(line.startswith(("ok    ", "FAIL  ")) for line in lines(out)[:-1])
    assert "FAIL  claude: `sciontool` is not on the current PATH" in out
    assert lines(out)[-1] == "6 checks, 1 failed"  # the relay is checked once sciontool is found
    both = agent.run("doctor", "--project", str(project), "--user")
    assert (both.returncode, both.stdout) == (1, b"")
    assert both.stderr == b"sciontool doctor: --project and --user exclude each other\n"
    missing = agent.run("doctor", "--project", str(tmp_path / "typo"))
    assert (missing.returncode, missing.stdout) == (1, b"")
    assert missing.stderr == f"sciontool doctor: --project {tmp_path / 'typo'}: no such folder\n".encode()


def test_the_hook_never_imports_doctor(agent: Agent) -> None:
    ran = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sciontool_py", "hook", "--dialect=claude"],
        input=b'{"hook_event_name": "Stop"}',
        capture_output=True,
        env={**agent.env, "SCION_TELEMETRY_ENABLED": "false"},
        timeout=60,
    )
    assert ran.returncode == 0
    imported = ran.stderr.decode()
    assert "sciontool_py.receiver.hook" in imported and "sciontool_py.doctor" not in imported
