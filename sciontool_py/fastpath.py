"""The hot commands, `hook`, `status` and `normalize`, without typer.

`hook` and `status` run once per agent event while the agent waits, and
`normalize` may stream millions of lines: typer costs more to import than
the whole hook, so these three parse their arguments by hand here, help
(`-h`, `--help`) included.  `cli.py` lists them in `sciontool --help` and
delegates to this module; nothing here imports typer.
"""

from __future__ import annotations

import os
import sys

from sciontool_py.errors import SciontoolError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from sciontool_py.log.writer import AgentLog

# Laid out as click lays out the other commands' help (cli.py), by hand: no typer here.
_DIALECT_OPTIONS = """\
  --dialect NAME       Dialect to read the envelope with (default: claude, as in
                       Scion).
  --dialect-file PATH  A dialect.yaml to use instead of a name.
  -h, --help           Show this message and exit."""
_HOOK_SYNOPSIS = (
    "sciontool hook [--dialect NAME | --dialect-file PATH] [--event NAME] "
    "[ask_user|task_completed [MESSAGE...] | EVENT_NAME | JSON]"
)
_STATUS_SYNOPSIS = "sciontool status TYPE [MESSAGE...]"
_NORMALIZE_SYNOPSIS = "sciontool normalize [--dialect NAME | --dialect-file PATH] [--raw] [FILE...]"
HOOK_USAGE = f"usage: {_HOOK_SYNOPSIS}"
STATUS_USAGE = f"usage: {_STATUS_SYNOPSIS}"
NORMALIZE_USAGE = f"usage: {_NORMALIZE_SYNOPSIS}"
HELP = {
    "hook": f"""Usage: {_HOOK_SYNOPSIS}

  Read one JSON envelope on stdin, turn it into a canonical event through the
  dialect and update the agent's status files as Scion's hook does. Stdout
  carries only the dialect's declared response. Exit 0, or 1 with a one-line
  error; never 2.

Arguments:
  ask_user|task_completed [MESSAGE...]
                       Scion's older form: the same as `sciontool status`.
  EVENT_NAME           The event's name (Copilot CLI's form): a JSON object on
                       stdin is merged in, the name winning over its
                       hook_event_name; without one the envelope is
                       {{"hook_event_name": EVENT_NAME}}.
  JSON                 A JSON object: the envelope itself (Codex's notify
                       passes it so).

Options:
  --event NAME         The raw event name when the envelope carries none
                       (agentino's hooks send none); a name in the envelope
                       wins.
{_DIALECT_OPTIONS}
""",
    "status": f"""Usage: {_STATUS_SYNOPSIS}

  Set a sticky status, as core-agent's sciontool_status tool does.

Arguments:
  TYPE        ask_user, blocked, task_completed or limits_exceeded.
  MESSAGE...  What to tell the user (a default per type when left out).

Options:
  -h, --help  Show this message and exit.
""",
    "normalize": f"""Usage: {_NORMALIZE_SYNOPSIS}

  Print the canonical event of each envelope (one JSON document, or JSONL) as
  one JSON line, as Go's json.Marshal writes it; no side effects.

Arguments:
  FILE...              Envelopes to read; stdin when no FILE is given, and for
                       a FILE named -.

Options:
  --raw                Include the original envelope as data.raw.
{_DIALECT_OPTIONS}
""",
}
_VALUED = ("--dialect", "--dialect-file")


class HelpRequested(Exception):
    """`-h` or `--help` among a command's options."""


def parse_args(
    args: list[str], usage: str, flags: tuple[str, ...] = (), valued: tuple[str, ...] = ()
) -> tuple[dict[str, str], list[str]]:
    """Options (--dialect, --dialect-file and the given flags) and positional arguments.

    `--` ends the options; `-h` / `--help` before it raise HelpRequested.
    """
    options: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if arg in ("-h", "--help"):
            raise HelpRequested
        if name in _VALUED or name in valued:
            if not eq:
                i += 1
                if i == len(args):
                    raise SciontoolError(f"{name} needs a value ({usage})")
                value = args[i]
            options[name] = value
        elif arg in flags:
            options[arg] = ""
        elif arg == "--":
            positional += args[i + 1 :]
            break
        elif arg.startswith("-") and arg != "-":
            raise SciontoolError(f"unknown option {arg} ({usage})")
        else:
            positional.append(arg)
        i += 1
    return options, positional


def hook_command(args: list[str], log: AgentLog, origin: int = 0, in_helper: bool = False) -> None:
    """`sciontool hook ARGS`; origin: where its harness is looked for (0: this process's parent;
    the helper passes a relayed hook's parent); in_helper: run by HOME's helper, which watches
    its agents already (no helper to start, and nothing to write for one: its HOME may be on its
    way out)."""
    from sciontool_py.receiver.hook import receive_named, run_hook
    from sciontool_py.receiver.stdin import read_stdin

    options, positional = parse_args(args, HOOK_USAGE, valued=("--event",))
    if positional and positional[0] in ("ask_user", "task_completed"):
        # Scion's older form, still in harness configs.
        from sciontool_py.receiver.status import report_status

        report_status(positional[0], " ".join(positional[1:]), log)
        return
    if len(positional) > 1:
        raise SciontoolError(f"too many arguments ({HOOK_USAGE})")
    dialect, dialect_file, event = (
        options.get("--dialect"),
        options.get("--dialect-file"),
        _go_text(options.get("--event")),
    )
    undelivered = ""
    if positional and not positional[0].lstrip().startswith("{"):
        # Scion's `hook EVENT_NAME`: a payload on stdin, if one comes in time, under that name.
        answer = receive_named(dialect, dialect_file, _go_text(positional[0]) or "", event, log, origin)
    else:
        # A JSON object argument is the envelope itself (Codex's notify); a broken one is
        # refused as on stdin. The envelope goes straight into run_hook, which drops it once decoded.
        data = os.fsencode(positional[0]) if positional else read_stdin()
        answer = run_hook(dialect, dialect_file, data, log, event, origin)
    if answer.response and sys.stdout is not None:  # None: the harness closed stdout
        from sciontool_py.console import RESPONSE_WAIT_SECONDS, write_stdout

        # Bounded: a response larger than the pipe holds, with nobody reading, blocked forever.
        if not write_stdout(answer.response, RESPONSE_WAIT_SECONDS):
            undelivered = (
                f"stdout not read within {RESPONSE_WAIT_SECONDS:g} s: the response was not delivered"
            )
    from sciontool_py.deferred import defer
    from sciontool_py.telemetry import after_answer

    # Once answered: the export happens where the harness does not wait.
    defer(lambda: after_answer(log, answer.event))
    if answer.watch and not in_helper:
        from sciontool_py.receiver import harness_exit

        defer(lambda: harness_exit.ensure(log, dialect, dialect_file))
    if answer.failure or undelivered:
        raise SciontoolError("; ".join(m for m in (answer.failure, undelivered) if m))


def _go_text(arg: str | None) -> str | None:
    """An argument as Go reads it: each byte that is not UTF-8 is U+FFFD (Python keeps it as a
    surrogate, which would reach agent.log as the raw byte)."""
    if arg is None or arg.isascii():
        return arg
    from sciontool_py.gojson import decode_utf8

    return decode_utf8(os.fsencode(arg))


def status_command(args: list[str], log: AgentLog) -> None:
    from sciontool_py.receiver.status import report_status

    # The message is free text: only help is an option, and `--` lets a message start with a dash.
    cut = args.index("--") if "--" in args else len(args)
    if "-h" in args[:cut] or "--help" in args[:cut]:
        raise HelpRequested
    args = args[:cut] + args[cut + 1 :]
    if not args or (cut > 0 and args[0].startswith("-")):
        raise SciontoolError(f"missing status type ({STATUS_USAGE})")
    report_status(args[0], " ".join(args[1:]), log)


def normalize_command(args: list[str], log: AgentLog) -> None:
    from sciontool_py.dialect.discover import resolve
    from sciontool_py.dialect.stream import normalize_files

    options, files = parse_args(args, NORMALIZE_USAGE, flags=("--raw",))
    spec = resolve(options.get("--dialect"), options.get("--dialect-file"))
    normalize_files(spec, files, "--raw" in options)


COMMANDS: dict[str, Callable[[list[str], AgentLog], None]] = {
    "hook": hook_command,
    "status": status_command,
    "normalize": normalize_command,
}


def guarded(
    command: str, run: Callable[[list[str], AgentLog], None], args: list[str], log: AgentLog | None = None
) -> int:
    """Run a command so that no input can make it exit 2 or print a traceback.

    Exit 2 means "block this tool call" to Claude-family harnesses; the hook
    only observes, so every failure is a one-line message and exit 1; an
    internal error's traceback goes to agent.log at DEBUG. log: the command's
    agent.log (by default HOME's, quiet: the harness captures stderr).
    """
    if log is None:
        from sciontool_py.fs import home_dir
        from sciontool_py.log.writer import AgentLog

        log = AgentLog(home_dir(), quiet=True)
    try:
        run(args, log)
    except HelpRequested:
        sys.stdout.write(HELP[command])
        return 0
    except SciontoolError as exc:
        error_line(f"sciontool {command}: {exc}")
        return 1
    except KeyboardInterrupt:
        return 1
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as shell tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        return 1
    except Exception as exc:  # last line of defence for an observer
        log.traceback(f"sciontool {command}", exc)
        error_line(f"sciontool {command}: internal error: {type(exc).__name__}: {exc}")
        return 1
    return 0


ERROR_WAIT_SECONDS = 1.0  # for a stderr pipe that is full: the state is written by now


def error_line(message: str) -> None:
    """One line on stderr, however many lines or control characters the message carries."""
    from sciontool_py.console import ERROR_LIMIT, cut, escape_controls, write_stderr

    write_stderr(escape_controls(" ".join(cut(message, ERROR_LIMIT).split("\n"))) + "\n", ERROR_WAIT_SECONDS)


def run(command: str, args: list[str]) -> int:
    """Run one of COMMANDS with its arguments; returns the exit status."""
    return guarded(command, COMMANDS[command], args)
