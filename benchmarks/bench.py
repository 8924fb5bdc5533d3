"""Measure the hook and the batch normalizer against their floors, in one run.

Run with the installed environment's interpreter (`make bench`). Every
timing is a whole process (`subprocess.run`), runs of the cases alternate
so drift on a busy machine hits all of them alike, and the table shows
medians with the 10th-90th percentile spread. Exits 1 when a ratio is
above its target, so it can serve as a check (never inside unit tests).
normalize runs on two seeded logs: the generated one (strings and
integers) and a real-like one (floats, non-ASCII, U+2028/9); with `go` on
PATH, beside a Go build of the same mapping (benchmarks/gonormalize),
whose bytes must equal normalize's.
Last, with agentino installed (the `[agentino]` extra), the cost of one
agentino hook event: a real HookManager.fire with register() applied, in
process and in command mode, beside fire with a callback that does nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from otlp import GrpcReceiver  # the tests' real OTLP/gRPC receiver

from sciontool_py.harness.program import relay_prefix
from sciontool_py.helper.bash import ADDRESS

HOOK_TARGET = 1.5
OWN_TARGET_MS = 5.0  # a hook's own cost (above `python -c pass`) when the resident runs it
NORMALIZE_TARGET = 2.5
MEMORY_GROWTH_TARGET_MIB = 10.0

PYTHON = sys.executable
SCIONTOOL = str(Path(sys.executable).with_name("sciontool"))
CORE_AGENT = {
    "tool-start": {
        "hook_event_name": "tool-start",
        "tool_input": {"path": "/etc/hosts"},
        "tool_name": "read_file",
    },
    "tool-end": {
        "hook_event_name": "tool-end",
        "tool_name": "read_file",
        "tool_output": {"content": "127.0.0.1"},
    },
    "model-start": {"hook_event_name": "model-start"},
    "agent-end": {"hook_event_name": "agent-end"},
}
CLAUDE_PROMPT = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "Fix the failing test"}
# A tool start rewrites agent-sessions.json (the open calls) on every call: the state file's cost.
CLAUDE_TOOL = {
    "hook_event_name": "PreToolUse",
    "session_id": "s",
    "tool_name": "Bash",
    "tool_use_id": "toolu_01",
    "tool_input": {"command": "make test"},
}
BARE_LOOPS = {
    "json": "import json,sys\nw=sys.stdout.write\nfor l in sys.stdin: w(json.dumps(json.loads(l))+'\\n')",
    "orjson": (
        "import orjson,sys\nw=sys.stdout.buffer.write\n"
        "for l in sys.stdin.buffer: w(orjson.dumps(orjson.loads(l))+b'\\n')"
    ),
}


class Case:
    def __init__(
        self, name: str, argv: list[str], stdin: bytes = b"", env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = argv
        self.stdin = stdin
        self.env = env
        self.samples: list[float] = []

    def run(self, stdin_file: str | None = None) -> None:
        if stdin_file:
            with open(stdin_file, "rb") as handle:
                start = time.perf_counter_ns()
                done = subprocess.run(
                    self.argv, stdin=handle, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env
                )
        else:
            start = time.perf_counter_ns()
            done = subprocess.run(
                self.argv, input=self.stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env
            )
        elapsed = time.perf_counter_ns() - start
        if done.returncode != 0:
            raise SystemExit(f"{self.name} failed: {done.stderr.decode().strip()}")
        self.samples.append(elapsed / 1e6)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def spread(self) -> str:
        qs = statistics.quantiles(self.samples, n=10) if len(self.samples) > 1 else [self.median] * 9
        return f"{qs[0]:.1f}-{qs[-1]:.1f}"


def alternate(
    cases: list[Case], rounds: int, stdin_file: str | None = None, settle: Callable[[], None] | None = None
) -> None:
    for case in cases:  # warm-up: page cache, dialect cache, .pyc files (and the residents started)
        case.run(stdin_file)
        case.samples.clear()
    if settle is not None:
        settle()
    for _ in range(rounds):
        for case in random.sample(cases, len(cases)):
            case.run(stdin_file)


def residents_up(cases: list[Case]) -> None:
    """Wait (10 s at most) until every HOME the relayed cases use has its resident listening."""
    from sciontool_py.helper import client

    homes = {c.env["HOME"] for c in cases if c.env and c.env.get("SCIONTOOL_EXIT_WATCH") != "off"}
    deadline = time.monotonic() + 10
    for home in homes:
        while (sock := client.connect(home)) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if sock is not None:
            sock.close()
        while not os.path.exists(os.path.join(home, ADDRESS)) and time.monotonic() < deadline:
            time.sleep(0.05)  # the shell relay's address, written once the helper listens


WORDS = ("the", "agent", "reads", "a", "file", "then", "runs", "tests", "and", "edits", "code", "<", "&", ">")


def write_log(path: str, lines: int) -> None:
    """A core-agent session as its dispatcher writes it (Go's sorted keys, compact).

    Every fourth line is a tool call, model call or turn end; tool payloads
    vary in path, arguments and output size (40 to 2,000 characters) the way
    file reads and commands do, so no two tool lines are alike.
    """
    rng = random.Random(7)
    with open(path, "w") as handle:
        for i in range(lines):
            step = i % 4
            if step == 0:
                envelope: dict[str, object] = {
                    "hook_event_name": "tool-start",
                    "tool_input": {"path": f"/src/pkg{i % 97}/mod{i}.py", "limit": rng.randint(1, 500)},
                    "tool_name": "read_file",
                }
            elif step == 1:
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 330)))
                envelope = {
                    "hook_event_name": "tool-end",
                    "tool_name": "read_file",
                    "tool_output": {"content": text, "lines": text.count("s") + 1},
                }
            else:
                envelope = {"hook_event_name": "model-start" if step == 2 else "agent-end"}
            handle.write(json.dumps(envelope, separators=(",", ":"), sort_keys=True) + "\n")


# Words of tool output in several scripts, and the characters Go escapes (HTML, U+2028/9).
REAL_WORDS = (
    *WORDS,
    "café",
    "naïve",
    "Größe",
    "résumé",
    "日本語",
    "テスト",
    "Привет",
    "¿qué?",
    "—",
    "→",
    "✓",
    "😀",
    "line\u2028sep",
    "para\u2029graph",
)
# Floats a tool payload may carry, Go's corner cases among them.
EDGE_FLOATS = (1e21, 1e20, 100.0, -0.0, 5e-324, 1.7976931348623157e308, 1e-7, 1e-6, 6.02214076e23, 0.1)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(REAL_WORDS) for _ in range(words))


def _payloads(rng: random.Random, i: int) -> tuple[str, dict[str, object], dict[str, object]]:
    """(tool name, input, output) of one tool call, shaped like the real harnesses' payloads."""
    shape = rng.randrange(5)
    if shape == 0:  # a shell command: stdout, exit code, duration
        out = _text(rng, rng.randint(4, 300))
        return (
            "run_shell_command",
            {"command": f"pytest -q tests/test_{i % 50}.py", "description": _text(rng, 5), "timeout": 120.0},
            {"stdout": out, "stderr": "", "exit_code": 0, "duration_seconds": rng.random() * 30},
        )
    if shape == 1:  # a file read
        out = _text(rng, rng.randint(8, 330))
        return (
            "read_file",
            {
                "file_path": f"/home/dev/src/pkg{i % 97}/mod_é{i}.py",
                "offset": rng.randint(0, 900),
                "limit": 2000,
            },
            {
                "content": out,
                "num_lines": out.count(" ") + 1,
                "truncated": False,
                "elapsed_ms": rng.random() * 5,
            },
        )
    if shape == 2:  # a search with scored results
        results = [
            {"title": _text(rng, 6), "url": f"https://example.org/{i}/{k}", "score": rng.random()}
            for k in range(rng.randint(1, 6))
        ]
        return (
            "web_search",
            {"query": _text(rng, 4), "max_results": 6},
            {"results": results, "took": rng.random()},
        )
    if shape == 3:  # coordinates and measurements
        point = {
            "lat": rng.uniform(-90, 90),
            "lon": rng.uniform(-180, 180),
            "alt_m": round(rng.uniform(0, 3000), 1),
        }
        return (
            "geocode",
            {"address": _text(rng, 5)},
            {
                "point": point,
                "accuracy": rng.choice(EDGE_FLOATS),
                "bbox": [rng.uniform(-1, 1) for _ in range(4)],
            },
        )
    # model-ish numbers: settings, costs, extremes
    return (
        "evaluate",
        {"temperature": 0.7, "top_p": 0.95, "threshold": rng.choice(EDGE_FLOATS)},
        {
            "summary": _text(rng, rng.randint(4, 60)),
            "cost_usd": rng.random() / 1000,
            "values": [rng.choice(EDGE_FLOATS) for _ in range(3)],
            "tokens": rng.randint(1, 9000),
        },
    )


def write_real_log(path: str, lines: int) -> None:
    """A log like the real harnesses' tool payloads, in core-agent's envelopes (seeded).

    Two lines in three are tool calls, whose input and output carry floats (durations, scores,
    coordinates, costs, and Go's corner cases: 1e21, 100.0, -0.0, 5e-324...), text in several
    scripts, HTML characters and U+2028/9; the rest are model starts and turn ends with usage.
    Written with Python's json (ASCII escapes off), compact, keys sorted.
    """
    rng = random.Random(2028)
    tool: tuple[str, dict[str, object], dict[str, object]] = ("", {}, {})
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(lines):
            step = i % 6
            envelope: dict[str, object]
            if step in (1, 3):
                tool = _payloads(rng, i)
                envelope = {"hook_event_name": "tool-start", "tool_name": tool[0], "tool_input": tool[1]}
            elif step in (2, 4):
                envelope = {"hook_event_name": "tool-end", "tool_name": tool[0], "tool_output": tool[2]}
            elif step == 0:
                envelope = {"hook_event_name": "model-start", "model": "gemini-2.5-flash"}
            else:
                usage = {"input_tokens": rng.randint(100, 90_000), "output_tokens": rng.randint(1, 4000)}
                envelope = {"hook_event_name": "agent-end", "usage": usage, "duration_ms": rng.random() * 9e4}
            text = json.dumps(envelope, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
            handle.write(text + "\n")


def peak_rss_kib(argv: list[str], stdin_file: str) -> int:
    """Peak resident memory of one process, measured by a fresh parent."""
    probe = (
        "import resource,subprocess,sys\n"
        f"subprocess.run({argv!r}, stdin=open({stdin_file!r}, 'rb'), stdout=subprocess.DEVNULL, check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    return int(subprocess.run([PYTHON, "-c", probe], capture_output=True, check=True, text=True).stdout)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def installed_json_libraries() -> list[str]:
    found = ["json"]
    if subprocess.run([PYTHON, "-c", "import orjson"], capture_output=True).returncode == 0:
        found.append("orjson")
    return found


# What agentino's agent loop fires around one tool call.
AGENTINO_EVENTS = (
    ("PreToolUse", {"tool_name": "shell", "arguments": {"command": "ls"}}),
    ("PostToolUse", {"tool_name": "shell", "arguments": {"command": "ls"}, "result": "a.txt\nb.txt"}),
)


def agentino_fires(mode: str | None, fires: int) -> list[float]:
    """Microseconds of each HookManager.fire, alternating the two tool events: mode None is a
    callback that does nothing (agentino's own cost), else register(hooks, mode=mode)."""
    import asyncio

    from agentino import HookManager

    from sciontool_py.integrations.agentino import register

    hooks = HookManager()
    if mode is None:
        for event, _ in AGENTINO_EVENTS:
            hooks.register(event, callback=lambda context: None)
    else:
        register(hooks, mode=mode, executable=SCIONTOOL)

    async def run() -> list[float]:
        samples = []
        for i in range(fires + 10):  # the first ten warm the dialect cache and the worker thread
            event, context = AGENTINO_EVENTS[i % 2]
            start = time.perf_counter_ns()
            await hooks.fire(event, context)
            if i >= 10:
                samples.append((time.perf_counter_ns() - start) / 1e3)
        return samples

    return asyncio.run(run())


def receive_alone(fires: int) -> list[float]:
    """Microseconds of hook.receive for the same events: the pipeline without agentino or the thread."""
    from sciontool_py.dialect.discover import find_dialect
    from sciontool_py.fs import home_dir
    from sciontool_py.log.writer import AgentLog
    from sciontool_py.receiver.hook import receive

    log = AgentLog(home_dir(), quiet=True)  # as the hook and register() make it: no stderr mirror
    spec = find_dialect("agentino")
    samples = []
    for i in range(fires + 10):
        event, context = AGENTINO_EVENTS[i % 2]
        start = time.perf_counter_ns()
        receive(spec, context, log, event)
        if i >= 10:
            samples.append((time.perf_counter_ns() - start) / 1e3)
    return samples


def agentino_rows(tmp: str, fires: int, command_fires: int) -> list[tuple[str, str, str]]:
    """(case, median µs, p10-p90 µs) of one agentino hook event; [] without agentino."""
    try:
        import agentino  # noqa: F401
    except ImportError:
        print("agentino is not installed: its hook cost is not measured")
        return []
    home = os.path.join(tmp, "agentino-home")
    os.mkdir(home)
    saved = dict(os.environ)
    os.environ.update(HOME=home, SCIONTOOL_CACHE_DIR=os.path.join(tmp, "cache"))
    for name in [k for k in os.environ if k.startswith("SCION_")]:
        del os.environ[name]
    try:
        cases = [
            ("agentino fire, a do-nothing callback", agentino_fires(None, fires)),
            ("hook.receive() alone, same events", receive_alone(fires)),
            ("agentino fire, register() in process", agentino_fires("callback", fires)),
            ("agentino fire, register(mode='command')", agentino_fires("command", command_fires)),
        ]
    finally:
        os.environ.clear()
        os.environ.update(saved)
    rows = []
    for name, samples in cases:
        qs = statistics.quantiles(samples, n=10)
        rows.append((name, f"{statistics.median(samples):.1f}", f"{qs[0]:.1f}-{qs[-1]:.1f}"))
    return rows


GO_SOURCE = Path(__file__).resolve().parent / "gonormalize" / "main.go"


def build_go(tmp: str) -> str | None:
    """benchmarks/gonormalize built with the `go` on PATH (its cache in tmp); None without Go."""
    go = shutil.which("go")
    if go is None:
        print("go is not installed: normalize is not timed against Go")
        return None
    program = os.path.join(tmp, "gonormalize")
    env = {**os.environ, "GOCACHE": os.path.join(tmp, "gocache"), "GO111MODULE": "off", "CGO_ENABLED": "0"}
    subprocess.run([go, "build", "-o", program, str(GO_SOURCE)], check=True, env=env)
    return program


def same_output(a: list[str], b: list[str], stdin_file: str) -> bool:
    outputs = []
    for argv in (a, b):
        with open(stdin_file, "rb") as handle:
            outputs.append(subprocess.run(argv, stdin=handle, capture_output=True, check=True).stdout)
    return outputs[0] == outputs[1]


def normalize_rows(
    rows: list[tuple[str, ...]],
    label: str,
    log: str,
    args: argparse.Namespace,
    env: dict[str, str],
    go_program: str | None,
) -> list[str]:
    """Time normalize on one log beside the bare loops (and Go); its rows, and what fails."""
    failures = []
    normalize = Case(
        f"normalize core-agent, {label} log ({args.lines} lines, {os.path.getsize(log) // 1_000_000} MB)",
        [SCIONTOOL, "normalize", "--dialect=core-agent"],
        env=env,
    )
    loops = [
        Case(f"  bare loop: {lib}", [PYTHON, "-c", BARE_LOOPS[lib]]) for lib in installed_json_libraries()
    ]
    go = [Case("  Go, encoding/json (benchmarks/gonormalize)", [go_program])] if go_program else []
    alternate([normalize, *loops, *go], args.batch_rounds, stdin_file=log)
    fastest = min(loops, key=lambda c: c.median)
    ratio = normalize.median / fastest.median
    rows.append((normalize.name, f"{normalize.median:.1f}", normalize.spread(), f"{ratio:.2f}"))
    for case in loops + go:
        rows.append((case.name, f"{case.median:.1f}", case.spread(), f"{case.median / fastest.median:.2f}"))
    if ratio > NORMALIZE_TARGET:
        failures.append(f"normalize, {label} log: {ratio:.2f}x {fastest.name.strip()} > {NORMALIZE_TARGET}")
    if go:
        print(f"{label} log: normalize / Go = {normalize.median / go[0].median:.2f}")
        if not same_output(normalize.argv, go[0].argv, log):
            failures.append(f"{label} log: normalize and Go wrote different bytes")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="alternating runs per hook case (default 40)")
    parser.add_argument("--batch-rounds", type=int, default=15, help="runs per batch case (default 15)")
    parser.add_argument(
        "--lines", type=int, default=100_000, help="lines of the generated log (default 100000)"
    )
    parser.add_argument(
        "--agentino-fires", type=int, default=2000, help="in-process agentino events (default 2000)"
    )
    parser.add_argument(
        "--agentino-command-fires", type=int, default=60, help="command-mode agentino events (default 60)"
    )
    args = parser.parse_args()

    failures: list[str] = []
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory(prefix="sciontool-bench-") as tmp:
        home = os.path.join(tmp, "home")
        os.mkdir(home)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SCION_", "OTEL_"))}
        env.update(HOME=home, SCIONTOOL_CACHE_DIR=os.path.join(tmp, "cache"))

        floor = Case("floor: python -c 'import re, sys'", [PYTHON, "-c", "import re, sys"])
        bare = Case("python -c pass", [PYTHON, "-c", "pass"])
        bash = Case("bash -c true (the shell relay's floor)", ["bash", "-c", "true"])
        # Outside Scion a hook hands its work to the HOME's resident helper once it runs (the bench
        # process is the harness: it lives as long as the bench); "alone", a hook does it all in
        # its own process (SCIONTOOL_EXIT_WATCH=off: no resident), as the first hook of an agent does.
        alone_env = {**env, "HOME": os.path.join(tmp, "home-alone"), "SCIONTOOL_EXIT_WATCH": "off"}
        os.mkdir(alone_env["HOME"])
        hooks = [
            Case(
                f"hook core-agent {name}",
                [SCIONTOOL, "hook", "--dialect=core-agent"],
                json.dumps(env_).encode(),
                env,
            )
            for name, env_ in CORE_AGENT.items()
        ]
        for name, envelope in (("prompt-submit", CLAUDE_PROMPT), ("tool-start (state file)", CLAUDE_TOOL)):
            hooks.append(
                Case(
                    f"hook claude {name}",
                    [SCIONTOOL, "hook", "--dialect=claude"],
                    json.dumps(envelope).encode(),
                    env,
                )
            )
        hooks.append(
            Case(
                "hook claude tool-start, alone",
                [SCIONTOOL, "hook", "--dialect=claude"],
                json.dumps(CLAUDE_TOOL).encode(),
                alone_env,
            )
        )
        # Telemetry on (the default) with a live OTLP/gRPC receiver: the hook spools the event and a
        # detached worker exports it; and with nothing listening on the port: one refused connect.
        receiver = GrpcReceiver()
        envs: dict[str, dict[str, str]] = {}
        for name, port in (("live receiver", receiver.port), ("nothing listening", free_port())):
            telemetry_home = os.path.join(tmp, f"home-{port}")
            os.mkdir(telemetry_home)
            telemetry_env = {**env, "HOME": telemetry_home, "SCION_OTEL_GRPC_PORT": str(port)}
            envs[name] = telemetry_env
            hooks.append(
                Case(
                    f"hook core-agent tool-end, telemetry: {name}",
                    [SCIONTOOL, "hook", "--dialect=core-agent"],
                    json.dumps(CORE_AGENT["tool-end"]).encode(),
                    telemetry_env,
                )
            )
        # As `harness install` wires a shell hook on Linux: bash hands it to the resident helper.
        shell = shlex.split(relay_prefix())
        if shell:
            hooks.append(
                Case(
                    "hook claude tool-start, shell relay",
                    [*shell, SCIONTOOL, "hook", "--dialect=claude"],
                    json.dumps(CLAUDE_TOOL).encode(),
                    env,
                )
            )
            hooks.append(
                Case(
                    "hook core-agent tool-end, telemetry: live receiver, shell relay",
                    [*shell, SCIONTOOL, "hook", "--dialect=core-agent"],
                    json.dumps(CORE_AGENT["tool-end"]).encode(),
                    envs["live receiver"],
                )
            )
        hooks.append(
            Case(
                "hook core-agent tool-end, telemetry: live receiver, alone",
                [SCIONTOOL, "hook", "--dialect=core-agent"],
                json.dumps(CORE_AGENT["tool-end"]).encode(),
                {**alone_env, "SCION_OTEL_GRPC_PORT": str(receiver.port)},
            )
        )
        try:
            alternate([floor, bare, bash, *hooks], args.rounds, settle=lambda: residents_up(hooks))
        finally:
            receiver.close()
        exported = len(receiver.logs())
        rows.append((floor.name, f"{floor.median:.1f}", floor.spread(), "1.00", ""))
        rows.append((bare.name, f"{bare.median:.1f}", bare.spread(), f"{bare.median / floor.median:.2f}", ""))
        rows.append((bash.name, f"{bash.median:.1f}", bash.spread(), f"{bash.median / floor.median:.2f}", ""))
        for case in hooks:
            ratio = case.median / floor.median
            # Paired by round (the cases run in a random order within each): a busy moment of the
            # machine costs a hook and its floor alike, where two medians would each take their own.
            floor_case = bash if case.name.endswith("shell relay") else bare
            own = statistics.median(h - b for h, b in zip(case.samples, floor_case.samples, strict=True))
            rows.append((case.name, f"{case.median:.1f}", case.spread(), f"{ratio:.2f}", f"{own:.1f}"))
            if ratio > HOOK_TARGET:
                failures.append(f"{case.name}: {ratio:.2f}x floor > {HOOK_TARGET}")
            if not case.name.endswith("alone") and own > OWN_TARGET_MS:
                failures.append(f"{case.name}: its own {own:.1f} ms > {OWN_TARGET_MS:g} ms")

        go_program = build_go(tmp)
        for label, writer in (("generated", write_log), ("real-like", write_real_log)):
            log = os.path.join(tmp, f"{label}.jsonl")
            writer(log, args.lines)
            failures += normalize_rows(rows, label, log, args, env, go_program)

        small, large = os.path.join(tmp, "20k.jsonl"), os.path.join(tmp, "200k.jsonl")
        write_log(small, 20_000)
        write_log(large, 200_000)
        argv = [SCIONTOOL, "normalize", "--dialect=core-agent"]
        rss_small, rss_large = peak_rss_kib(argv, small), peak_rss_kib(argv, large)
        growth = (rss_large - rss_small) / 1024
        agentino = agentino_rows(tmp, args.agentino_fires, args.agentino_command_fires)

    width = max(len(r[0]) for r in rows)
    print(f"telemetry: the live receiver got {exported} log records (one per hook run, warm-ups included)")
    print(f"{'case':<{width}}  {'median ms':>9}  {'p10-p90 ms':>13}  {'ratio':>5}  {'own ms':>6}")
    for name, median, spread, ratio, *own in rows:
        print(f"{name:<{width}}  {median:>9}  {spread:>13}  {ratio:>5}  {''.join(own):>6}")
    print(
        f"normalize peak RSS: {rss_small / 1024:.1f} MiB at 20k lines, "
        f"{rss_large / 1024:.1f} MiB at 200k lines (growth {growth:.1f} MiB)"
    )
    if agentino:
        width = max(len(r[0]) for r in agentino)
        print(f"\n{'agentino hook, per event':<{width}}  {'median µs':>9}  {'p10-p90 µs':>15}")
        for name, median, spread in agentino:
            print(f"{name:<{width}}  {median:>9}  {spread:>15}")
        print()
    if growth > MEMORY_GROWTH_TARGET_MIB:
        failures.append(f"normalize memory grew {growth:.1f} MiB > {MEMORY_GROWTH_TARGET_MIB}")
    print(
        f"targets: hook <= {HOOK_TARGET}x floor, a relayed hook's own cost <= {OWN_TARGET_MS:g} ms (own ms: "
        f"the median of each round's time above `python -c pass`'s, or above `bash -c true`'s through "
        f"the shell relay; 'alone': "
        f"the hook in its own process, no resident), "
        f"normalize <= {NORMALIZE_TARGET}x fastest bare loop on both logs (ratio column: hooks vs floor; "
        f"normalize, the loops and Go vs the fastest loop), memory growth < {MEMORY_GROWTH_TARGET_MIB:g} MiB"
    )
    for failure in failures:
        print(f"ABOVE TARGET: {failure}")
    print("all ratios within target" if not failures else f"{len(failures)} ratio(s) above target")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
