"""`sciontool emit`: the work behind the command (cli.py only wires the options)."""

from __future__ import annotations

import sys

from sciontool_py.emitter.config import load_config
from sciontool_py.emitter.dispatcher import Dispatcher
from sciontool_py.emitter.gate import AllowAll, DenyPatterns, PermissionGate
from sciontool_py.emitter.stream import Printer, Sink, agent_event, read_events, replay
from sciontool_py.errors import EmitError


def emit_command(
    *,
    event: str | None,
    tool_name: str | None,
    tool_input: str | None,
    tool_output: str | None,
    session_id: str,
    events: str | None,
    config: str | None,
    deny: list[str],
    withhold: list[str],
    pass_env: list[str],
    model_start_on_final_text: bool,
) -> None:
    if (event is None) == (events is None):
        raise EmitError("give either an EVENT or --events FILE|-")
    if config is None and (deny or withhold or pass_env):
        raise EmitError("--deny, --withhold and --pass-env go with --config")
    single = None
    if event is not None:
        single = agent_event(event, tool_name, tool_input, tool_output)  # validate before any side effect
    elif tool_name is not None or tool_input is not None or tool_output is not None:
        raise EmitError("--tool-name, --tool-input and --tool-output go with an EVENT, not --events")
    sink: Sink
    if config is None:
        sink = Printer(sys.stdout, session_id, model_start_on_final_text)
    else:
        gate: PermissionGate = DenyPatterns(deny) if deny else AllowAll()
        sink = Dispatcher(
            load_config(config),
            session_id=session_id,
            gate=gate,
            withheld_env=withhold,
            passed_env=pass_env,
            model_start_on_final_text=model_start_on_final_text,
        )
    if events is None:
        if single is None:
            sink.on_turn_end()
        else:
            sink.on_event(single)
    elif events == "-":
        replay(read_events(sys.stdin.buffer, "<stdin>"), sink)
    else:
        try:
            with open(events, "rb") as stream:
                replay(read_events(stream, events), sink)
        except OSError as exc:
            raise EmitError(f"{events}: {exc.strerror or exc}") from None
