"""The telemetry worker on a hostile machine (issue 21, items 1-7): the real hook, the real
detached worker (watched to its end by worker_watch), real receivers on 127.0.0.1 that trickle,
never end, echo, redirect or never answer, and real FIFOs, symlinks and /dev/zero in HOME.

Each case asserts its bound: the worker gone within WORKER_SECONDS of the hook's exit (its own
deadlines add up to a few seconds) and under MEMORY_KIB at its peak, nothing lost that should
be kept, no secret in agent.log, and the hook's answer unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TIMED, Agent
from hostile_otlp import RawHttp, echo, endless, redirect_to, trickle
from otlp import GrpcReceiver, HttpReceiver
from worker_watch import Watched, watch

from sciontool_py.telemetry import credentials, spool
from sciontool_py.telemetry.worker import SETTLE_LIMIT_SECONDS

WORKER_SECONDS = 25.0  # the worker's own bound is under 5 s; the rest is a loaded 2-core machine
MEMORY_KIB = 150 * 1024  # the worker with the SDK and an exporter peaks near 40 MiB (measured: 36 to 48)
NOTE = {"hook_event_name": "Notification", "session_id": "s", "message": "from the hook"}
SPOOL = Path(".scion") / "telemetry"
SECRET_TOKEN = "tok-otlp-5e2b9c1d7a"
SECRET_KEY = "key-otlp-8f3a6d2c4b"


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    found = HttpReceiver()
    yield found
    found.close()


def url(found: HttpReceiver) -> str:
    return f"http://127.0.0.1:{found.port}"


def http_env(agent: Agent, url: str, **more: str) -> dict[str, str]:
    return {
        **agent.env,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": url,
        "OTEL_EXPORTER_OTLP_TIMEOUT": "250",  # Scion's hook timeout: the bounds below are measured with it
        "SCION_LOG_LEVEL": "debug",
        **more,
    }


def finished(watched: Watched, within: float = WORKER_SECONDS) -> None:
    """The hook answered as ever; its one worker ended by itself, in time, under the memory cap."""
    assert (watched.returncode, watched.stdout, watched.stderr) == (0, "", "")
    worker = watched.worker
    assert not worker.killed, f"the worker still ran {within:g}s after the hook"
    assert worker.status == 0 and worker.seconds < within, (worker.status, worker.seconds)
    assert worker.peak_kib < MEMORY_KIB, worker.peak_kib


def telemetry_lines(agent: Agent) -> list[str]:
    return [line.split("[DEBUG] ", 1)[1] for line in agent.log_lines if "[DEBUG] Hook telemetry" in line]


def messages(found: HttpReceiver) -> list[str]:
    return sorted(str(log.attributes.get("message")) for log in found.logs())


def spool_folder(agent: Agent) -> Path:
    folder = agent.home / SPOOL
    folder.mkdir(parents=True, mode=0o700)
    (agent.home / ".scion").chmod(0o700)
    return folder


def record(time_ns: int, message: str, name: str = "notification", **data: object) -> bytes:
    return json.dumps(
        {
            "v": 1,
            "time_ns": time_ns,
            "name": name,
            "raw_name": "Planted",
            "dialect": "claude",
            "data": {"session_id": "s", "message": message, **data},
            "env": {},
        }
    ).encode()


def entry_name(time_ns: int, index: int = 0) -> str:
    return f"{time_ns:020d}-1-{index:08x}.json"


def plant(folder: Path, name: str, data: bytes, mode: int = 0o600) -> Path:
    path = folder / name
    path.write_bytes(data)
    path.chmod(mode)
    return path


# Item 1 -----------------------------------------------------------------------------------------


def _plant_unreadable(folder: Path, elsewhere: Path) -> list[str]:
    """One entry of each kind the worker cannot read, oldest first; their names."""
    base = time.time_ns() - 10**12
    names = [entry_name(base, i) for i in range(6)]
    (folder / names[0]).mkdir()
    (folder / names[0] / "inside").write_text("x")
    (elsewhere / "target.json").write_bytes(record(base, "through a link"))
    (folder / names[1]).symlink_to(elsewhere / "target.json")
    os.mkfifo(folder / names[2], 0o600)
    plant(folder, names[3], record(base, "group-writable"), 0o660)
    plant(folder, names[4], b" " * ((1 << 20) + 1))
    other = plant(folder, names[5], record(base, "another user's"))
    if os.geteuid() == 0:
        os.chown(other, 54321, 54321)
    else:
        other.chmod(0o666)  # refused all the same: others may write it
    return names


def test_unreadable_spool_entries_are_set_aside_once_and_the_rest_exported(
    agent: Agent, receiver: HttpReceiver, tmp_path: Path
) -> None:
    folder = spool_folder(agent)
    bad = _plant_unreadable(folder, tmp_path)
    plant(folder, entry_name(time.time_ns() - 10**9), record(time.time_ns() - 10**9, "planted, sound"))
    env = http_env(agent, url(receiver))

    finished(watch(NOTE, env))
    receiver.wait_for(lambda: len(receiver.logs()) == 2)
    assert messages(receiver) == ["from the hook", "planted, sound"]
    assert sorted(os.listdir(folder)) == [spool.SET_ASIDE]
    assert sorted(os.listdir(folder / spool.SET_ASIDE)) == bad
    [line] = [line for line in telemetry_lines(agent) if "set aside" in line]
    assert line.startswith(f"Hook telemetry: 6 spooled entries set aside in {SPOOL}/{spool.SET_ASIDE}: ")

    finished(watch(NOTE, env))  # the next worker reads none of them again
    receiver.wait_for(lambda: len(receiver.logs()) == 3)
    assert len([line for line in telemetry_lines(agent) if "set aside" in line]) == 1
    assert sorted(os.listdir(folder / spool.SET_ASIDE)) == bad


def test_set_aside_entries_are_bounded(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for index in range(spool.MAX_SET_ASIDE + 5):
            name = entry_name(index + 1)
            (folder / name).mkdir()
            (folder / name / "deep").mkdir()
            (folder / name / "deep" / "file").write_text("x")
            (folder / name / "link").symlink_to(tmp_path)  # removed, never followed
            spool.set_aside(fd, name)
    finally:
        os.close(fd)
    kept = sorted(os.listdir(folder / spool.SET_ASIDE))
    assert kept == [entry_name(i + 1) for i in range(5, spool.MAX_SET_ASIDE + 5)]
    assert os.listdir(folder) == [spool.SET_ASIDE] and tmp_path.joinpath("spool").exists()


def test_the_spool_limit_holds_with_an_entry_that_cannot_be_removed(
    agent: Agent, receiver: HttpReceiver
) -> None:
    folder = spool_folder(agent)
    base = time.time_ns() - 10**12
    (folder / entry_name(base)).mkdir()  # the oldest: trimmed first, and a folder
    planted = spool.MAX_RECORDS + 50
    for index in range(1, planted + 1):
        plant(folder, entry_name(base + index), record(base + index, f"planted {index:05d}"))

    finished(watch(NOTE, {**http_env(agent, url(receiver))}))
    receiver.wait_for(lambda: len(receiver.logs()) == spool.MAX_RECORDS)
    # 1,000 kept of 1,052: the folder and the 51 oldest records dropped, the hook's event kept.
    assert messages(receiver) == sorted(
        ["from the hook", *(f"planted {i:05d}" for i in range(52, planted + 1))]
    )
    assert os.listdir(folder / spool.SET_ASIDE) == [entry_name(base)]
    assert [line for line in telemetry_lines(agent) if "spool full" in line] == [
        "Hook telemetry: spool full; the 52 oldest events dropped"
    ]


# Item 2 -----------------------------------------------------------------------------------------


@TIMED
def test_a_trickling_receiver_cannot_hold_the_worker_past_its_deadline(agent: Agent) -> None:
    server = RawHttp(trickle)
    try:
        watched = watch(NOTE, http_env(agent, server.url))
    finally:
        server.close()
    finished(watched)
    assert len(server.requests) >= 1  # it was reached, and answered a byte at a time
    assert any("(no answer within 0.5s)" in line for line in telemetry_lines(agent)), telemetry_lines(agent)


@TIMED
def test_an_endless_200_body_is_never_read(agent: Agent) -> None:
    server = RawHttp(endless)
    try:
        watched = watch(NOTE, http_env(agent, server.url))
    finally:
        server.close()
    finished(watched)
    assert len(server.requests) == 2  # spans and log records (a notification has no metric): each a success
    assert server.sent < 64 << 20  # what the kernel buffered before the worker closed the connection
    assert not [line for line in telemetry_lines(agent) if "dropped" in line]


@TIMED
def test_a_grpc_receiver_that_never_answers_cannot_hold_the_worker(agent: Agent) -> None:
    found = GrpcReceiver()
    found.silent = True
    try:
        watched = watch(
            NOTE, {**agent.env, "SCION_OTEL_GRPC_PORT": str(found.port), "SCION_LOG_LEVEL": "debug"}
        )
    finally:
        found.close()
    finished(watched)
    dropped = [line for line in telemetry_lines(agent) if "export dropped" in line]
    assert dropped and all(line.endswith(")") for line in dropped), telemetry_lines(agent)


# Item 3 -----------------------------------------------------------------------------------------


def _swapped(path: Path, kind: str) -> Path:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


@TIMED
@pytest.mark.parametrize(
    ("protocol", "variable"),
    [
        ("grpc", "OTEL_EXPORTER_OTLP_CERTIFICATE"),
        ("grpc", "OTEL_EXPORTER_OTLP_CLIENT_KEY"),
        ("grpc", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"),
        ("http/protobuf", "OTEL_EXPORTER_OTLP_CERTIFICATE"),
        ("http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY"),
    ],
)
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_tls_file_swapped_for_a_fifo_or_dev_zero_is_refused(
    agent: Agent, receiver: HttpReceiver, tmp_path: Path, protocol: str, variable: str, kind: str
) -> None:
    path = _swapped(tmp_path / "ca.pem", kind)
    env = {
        **agent.env,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"https://127.0.0.1:{receiver.port}",
        "SCION_LOG_LEVEL": "debug",
        variable: str(path),
    }
    finished(watch(NOTE, env))
    assert (
        f"Hook telemetry export dropped: {variable}={path}: not a regular file (refused); nothing is exported"
        in (telemetry_lines(agent))
    )


def test_a_regular_tls_file_is_pinned_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "ca.pem"
    path.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    env = {"OTEL_EXPORTER_OTLP_CERTIFICATE": str(path), "HOME": "/h"}
    assert credentials.pin_files(env) == ""
    pinned = env["OTEL_EXPORTER_OTLP_CERTIFICATE"]
    path.unlink()
    _swapped(path, "fifo")  # swapped after the check: what the exporters open is the checked copy
    assert (
        pinned.startswith("/proc/self/fd/") and Path(pinned).read_bytes() == b"-----BEGIN CERTIFICATE-----\n"
    )
    os.close(int(pinned.rsplit("/", 1)[1]))
    big = tmp_path / "big.pem"
    big.write_bytes(b"x" * (credentials.MAX_FILE_BYTES + 1))
    assert credentials.pin_files({"SSL_CERT_FILE": str(big)}).endswith("(refused)")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_a_regular_ca_file_still_verifies_an_https_receiver(
    agent: Agent, receiver: HttpReceiver, tmp_path: Path
) -> None:
    """The control case: the in-memory copy is what the exporter verifies the receiver with."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *(
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
            ),
            *("-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    receiver.server.socket = context.wrap_socket(receiver.server.socket, server_side=True)
    env = http_env(agent, f"https://127.0.0.1:{receiver.port}", OTEL_EXPORTER_OTLP_CERTIFICATE=str(cert))
    finished(watch(NOTE, env))
    receiver.wait_for(lambda: len(receiver.logs()) == 1)
    assert not [line for line in telemetry_lines(agent) if "dropped" in line], telemetry_lines(agent)


# Item 4 -----------------------------------------------------------------------------------------


def test_a_receiver_echoing_the_headers_puts_no_secret_in_agent_log(agent: Agent) -> None:
    server = RawHttp(echo)
    headers = f"authorization=Bearer%20{SECRET_TOKEN},x-api-key={SECRET_KEY}"
    try:
        watched = watch(NOTE, http_env(agent, server.url, OTEL_EXPORTER_OTLP_HEADERS=headers))
    finally:
        server.close()
    finished(watched)
    assert any(SECRET_TOKEN in line for head in server.requests for line in head)  # it was echoed
    log = (agent.home / "agent.log").read_text()
    assert "reason: " in log and "[redacted]" in log
    assert SECRET_TOKEN not in log and SECRET_KEY not in log


# Item 5 -----------------------------------------------------------------------------------------


@TIMED
def test_a_100000_entry_spool_is_trimmed_by_the_worker_not_the_hook(
    agent: Agent, receiver: HttpReceiver
) -> None:
    folder = spool_folder(agent)
    base = time.time_ns() - 10**12
    data = record(base, "planted")
    for index in range(100_000):
        fd = os.open(folder / entry_name(base + index), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.close(fd)

    watched = watch(NOTE, http_env(agent, url(receiver)), limit=240.0, count=folder)
    finished(watched, within=180.0)  # 99,000 unlinks on a shared disk (6 s on a quiet machine)
    assert (
        watched.left_at_hook_exit is not None and watched.left_at_hook_exit > 50_000
    )  # not trimmed by the hook
    receiver.wait_for(lambda: len(receiver.logs()) == spool.MAX_RECORDS)
    assert os.listdir(folder) == []


@TIMED
def test_256_records_of_1_mib_are_exported_in_byte_bounded_batches(
    agent: Agent, receiver: HttpReceiver
) -> None:
    folder = spool_folder(agent)
    base = time.time_ns() - 10**12
    for index in range(256):
        data = record(base + index, f"big {index:03d}", tool_output="")
        padding = (1 << 20) - len(data)
        plant(
            folder,
            entry_name(base + index),
            record(base + index, f"big {index:03d}", tool_output="o" * padding),
        )

    finished(watch(NOTE, http_env(agent, url(receiver)), limit=120.0))
    receiver.wait_for(lambda: len(receiver.logs()) == 257)
    outputs = [log.attributes["tool_output"] for log in receiver.logs() if "tool_output" in log.attributes]
    assert len(outputs) == 256 and all(len(str(o)) == 8 * 1024 + 3 for o in outputs)  # cut, with "..."


# Item 6 -----------------------------------------------------------------------------------------


def test_poisoned_open_spans_and_bad_records_drop_only_themselves(
    agent: Agent, receiver: HttpReceiver
) -> None:
    folder = spool_folder(agent)
    now = time.time_ns() - 10**9
    start = {
        "key": "tool-start\x00s\x00Bash",
        "name": "agent.tool.call",
        "trace_id": "zz" * 16,  # not hex
        "span_id": "00000000000000ab",
        "start_ns": now - 10**9,
        "attributes": {"tool_name": "Bash"},
    }
    sound = {
        **start,
        "key": "tool-start\x00s\x00Read",
        "trace_id": "ab" * 16,
        "attributes": {"tool_name": "Read"},
    }
    spans_file = agent.home / ".scion" / "telemetry-spans.json"
    spans_file.write_text(json.dumps({"version": 1, "open": [start, sound]}))
    spans_file.chmod(0o600)
    planted = [
        record(now + 1, "ends the poisoned start", name="tool-end", tool_name="Bash"),
        record(now + 2, "ends the sound start", name="tool-end", tool_name="Read"),
        record(2**70, "time out of range"),
        record(-5, "time before the epoch"),
        record(now + 3, "lone \ud800 surrogate"),
        record(now + 4, "count out of range", name="model-end", input_tokens=2**64),
        record(now + 5, "sound"),
    ]
    for index, data in enumerate(planted):
        plant(folder, entry_name(now + index), data)

    finished(watch(NOTE, http_env(agent, url(receiver))))
    receiver.wait_for(lambda: len(receiver.logs()) == 6)
    assert messages(receiver) == sorted(
        [
            "from the hook",
            "ends the poisoned start",
            "ends the sound start",
            "lone \ufffd surrogate",
            "count out of range",
            "sound",
        ]
    )
    spans = {str(s.attributes.get("tool_name")): s for s in receiver.spans()}
    assert spans["Read"].item.trace_id.hex() == "ab" * 16  # type: ignore[attr-defined]  # paired
    assert "duration_ms" not in spans["Bash"].attributes  # the poisoned start was dropped: unpaired
    lines = telemetry_lines(agent)
    assert len([line for line in lines if "its time_ns is not a time" in line]) == 2
    assert not [line for line in lines if "worker stopped" in line or "export dropped" in line], lines
    assert json.loads(spans_file.read_text())["open"] == []


# Item 7 -----------------------------------------------------------------------------------------


def test_the_worker_gets_only_the_environment_it_reads(agent: Agent, receiver: HttpReceiver) -> None:
    harness = {"ANTHROPIC_API_KEY": "sk-ant-x", "OPENAI_API_KEY": "sk-x", "GITHUB_TOKEN": "ghp-x"}
    watched = watch(NOTE, http_env(agent, url(receiver), SCION_AGENT_ID="agent-7", https_proxy="", **harness))
    finished(watched)
    names = set(watched.worker.environment)
    assert not names & set(harness), names
    assert {"HOME", "PATH", "SCION_AGENT_ID", "OTEL_EXPORTER_OTLP_ENDPOINT", "https_proxy"} <= names
    receiver.wait_for(lambda: len(receiver.logs()) == 1)


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_the_worker_runs_only_on_an_idle_cpu_and_still_exports(agent: Agent, receiver: HttpReceiver) -> None:
    # The harness it follows keeps the CPU: the worker's policy is SCHED_IDLE from its start.
    watched = watch(NOTE, http_env(agent, url(receiver)))
    finished(watched)
    assert watched.worker.policy == os.SCHED_IDLE
    receiver.wait_for(lambda: len(receiver.logs()) == 1)


def test_a_burst_of_hooks_holds_the_first_export_back_five_seconds_at_most(
    agent: Agent, receiver: HttpReceiver
) -> None:
    # Hooks that keep adding to the spool (here, a file made and removed every 50 ms: what a
    # record's arrival does to the folder) hold the SDK's load back, but not for good.
    folder = spool_folder(agent)
    stop = threading.Event()
    exported_at_3s: list[int] = []

    def busy() -> None:
        started = time.monotonic()
        while not stop.is_set():
            (folder / ".busy").touch()
            (folder / ".busy").unlink()
            if not exported_at_3s and time.monotonic() - started > 3:
                exported_at_3s.append(len(receiver.logs()))
            time.sleep(0.05)

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        watched = watch(NOTE, http_env(agent, url(receiver)))
    finally:
        stop.set()
        thread.join()
    finished(watched)
    assert exported_at_3s == [0]
    assert watched.worker.seconds >= SETTLE_LIMIT_SECONDS
    assert messages(receiver) == ["from the hook"]  # exported while the burst went on


def test_a_redirect_is_not_a_successful_export(agent: Agent, receiver: HttpReceiver) -> None:
    server = RawHttp(redirect_to(url(receiver)))
    try:
        watched = watch(NOTE, http_env(agent, server.url))
    finally:
        server.close()
    finished(watched)
    assert len(server.requests) == 2 and receiver.logs() == [] and receiver.spans() == []
    dropped = [line for line in telemetry_lines(agent) if line.startswith("Hook telemetry export dropped: ")]
    assert dropped == [
        "Hook telemetry export dropped: 1 spans (FAILURE)",
        "Hook telemetry export dropped: 1 log records (FAILURE)",
    ]
    assert any(
        "308 Permanent Redirect: a redirect is not followed" in line for line in telemetry_lines(agent)
    )


def test_stale_temp_files_of_killed_hooks_are_swept_and_nothing_else(tmp_path: Path) -> None:
    # A hook killed mid-write leaves `.NAME.tmp` in the spool; the worker sweeps those older than
    # STALE_TEMP_SECONDS. A write in progress, a record, a folder and a link's target stay.
    folder = tmp_path / "spool"
    folder.mkdir()
    outside = tmp_path / "outside"
    outside.write_text("keep")
    old = time.time() - spool.STALE_TEMP_SECONDS - 30
    for name in (".stale.tmp", ".dir.tmp", "record.tmp"):
        path = folder / name
        path.mkdir() if name == ".dir.tmp" else path.write_text("x")
        os.utime(path, (old, old))
    (folder / ".fresh.tmp").write_text("x")
    (folder / ".link.tmp").symlink_to(outside)
    os.utime(folder / ".link.tmp", (old, old), follow_symlinks=False)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        spool.sweep_temp_files(str(tmp_path), fd, time.time())
    finally:
        os.close(fd)
    assert sorted(os.listdir(folder)) == [".dir.tmp", ".fresh.tmp", "record.tmp"]
    assert outside.read_text() == "keep"
