"""Scion's status files for an agentino agent: `register(hooks)` wires all thirteen events.

agentino (agentino-framework, read at 1.1.1) fires hooks through a HookManager:
a callback gets the event's context dict, a command gets `json.dumps(context)`
on stdin. The context never names the event, so each event gets its own hook
that supplies the name, as `sciontool hook --event=NAME` does.

By default the hooks are in-process callbacks, agentino's advice for hooks on
the hot path: each runs the pipeline of `sciontool hook` (normalize through the
dialect, then every handler) without starting a process. A callback never
blocks the agent's tool call (it returns None, which agentino reads as "go
on") and never raises into agentino: a failure is one ERROR line in agent.log,
as the hook's own failures are. The work runs on one worker thread per
register(): agentino awaits each hook inline on its event loop, and a state
write (fsync), a lock held by another hook (up to 2 s) or a slow hub (up to
3 s) must not stall that loop; a single worker also keeps this agent's events
in the order they were fired. agentino awaits the callback, so a tool starts
only once its PreToolUse is on file, exactly as with a command hook.

Importing this module imports nothing heavy: not agentino, typer or YAML.
"""

from __future__ import annotations

import os

from sciontool_py.console import ERROR_LIMIT, cut
from sciontool_py.errors import SciontoolError
from sciontool_py.fs import home_dir
from sciontool_py.log.writer import AgentLog

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from concurrent.futures import Executor

    from agentino import HookManager

    from sciontool_py.dialect.spec import DialectSpec

# agentino's thirteen hook events (its HOOK_EVENTS), in the order of a session.
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
    "Stop",
    "StopFailure",
)
MODES = ("callback", "command")


def register(
    hook_manager: HookManager,
    dialect: str = "agentino",
    *,
    mode: str = "callback",
    executable: str = "sciontool",
) -> None:
    """Register Scion's hook on every agentino event of hook_manager.

    mode "callback" (the default) runs the hook in this process; "command" registers
    `EXECUTABLE hook --dialect=DIALECT --event=EVENT`, one process per event (executable:
    a program name on PATH or a path). The dialect is resolved now, in either mode, so a
    wrong name fails here (DialectError) rather than on every event, where agentino would
    only log it as a warning.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    from sciontool_py.dialect.discover import find_dialect

    spec = find_dialect(dialect)
    if mode == "command":
        for event in EVENTS:
            hook_manager.register(event, command=command_line(executable, spec.name, event))
        return
    from concurrent.futures import ThreadPoolExecutor

    log = AgentLog(
        home_dir(), quiet=True
    )  # as `sciontool hook`: agent.log has every line, the app's stderr none
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sciontool-hook")
    for event in EVENTS:
        hook_manager.register(event, callback=relay(spec, event, worker, log))


def command_line(executable: str, dialect: str, event: str) -> str:
    """The shell command agentino runs for one event (it passes the context on stdin)."""
    import shlex

    return f"{shlex.quote(executable)} hook --dialect={shlex.quote(dialect)} --event={event}"


def relay(
    spec: DialectSpec, event: str, worker: Executor, log: AgentLog
) -> Callable[[dict[str, object]], Awaitable[None]]:
    """The callback for one event: the context, as a command hook would read it, to the worker."""
    import asyncio

    async def callback(context: dict[str, object]) -> None:
        try:
            # Everything, the JSON round trip included, runs on the worker: a 100 MB context
            # must not hold the agent's event loop. agentino awaits this callback, so its
            # context (PreToolUse's "arguments" is the very dict the tool then runs with)
            # is not used by the agent until the worker has read it.
            await asyncio.get_running_loop().run_in_executor(worker, deliver, spec, context, event, log)
        except asyncio.CancelledError:
            raise  # the agent cancelled its own task: not an error of the hook's
        except BaseException as exc:  # an observer: nothing reaches agentino, not even SystemExit
            log_failure(log, event, exc)

    return callback


def deliver(spec: DialectSpec, context: dict[str, object], event: str, log: AgentLog) -> None:
    """One context through the receiver's pipeline (on the worker thread); never raises."""
    from sciontool_py.receiver.hook import parse_envelope, receive

    try:
        # The bytes agentino pipes to a command hook, so both modes read the same event.
        payload = parse_envelope(encode_context(context))
        answer = receive(spec, payload, log, event, origin=os.getpid())  # this process is the harness
    except BaseException as exc:  # SystemExit or KeyboardInterrupt from an object's __str__ too
        log_failure(log, event, exc)
        return
    from sciontool_py.telemetry import after_answer

    after_answer(log, answer.event)  # as the hook does once it has answered; never raises
    if answer.watch:
        from sciontool_py.receiver import harness_exit

        harness_exit.ensure(log, spec.name, None)  # this process's own exit is said too


def encode_context(context: dict[str, object]) -> bytes:
    """json.dumps(context) as agentino writes it for a command hook, except that what JSON
    cannot hold is taken as its text rather than costing the event: a value (a Path), a key
    (a tuple), even an object whose str() raises."""
    import json

    try:
        return json.dumps(context, default=_text).encode()
    except TypeError:  # a key JSON cannot hold: only then walk the context
        return json.dumps(_text_keys(context), default=_text).encode()


def _text(value: object) -> str:
    try:
        return str(value)
    except BaseException:  # SystemExit or KeyboardInterrupt from __str__ included
        return f"<{type(value).__name__} without a text form>"


def _text_keys(value: object) -> object:
    if isinstance(value, dict):
        return {
            key if isinstance(key, (str, int, float, bool)) or key is None else _text(key): _text_keys(item)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_text_keys(item) for item in value]
    return value


def log_failure(log: AgentLog, event: str, exc: BaseException) -> None:
    """The hook's one-line error, in agent.log: the application's stderr is not the agent's;
    an internal error's traceback too, at DEBUG."""
    where = f"sciontool hook --event={event}"
    internal = not isinstance(exc, SciontoolError)
    message = f"internal error: {type(exc).__name__}: {_text(exc)}" if internal else str(exc)
    log.write("", cut(f"{where}: {message}", ERROR_LIMIT), level="ERROR")
    if internal:
        log.traceback(where, exc)
