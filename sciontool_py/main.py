"""The `sciontool` entry point.

`hook` and `status` run once per agent event while the agent waits, and
`normalize` may stream millions of lines, so these three are parsed here by
hand and never import typer; every other command (and `--help`) goes
through the typer app in cli.py.
"""

from __future__ import annotations

import os
import sys

from sciontool_py.errors import SciontoolError

HOOK_USAGE = (
    "usage: sciontool hook [--dialect NAME | --dialect-file PATH] "
    "[ask_user|task_completed [MESSAGE...] | EVENT_NAME]"
)
STATUS_USAGE = "usage: sciontool status TYPE [MESSAGE...]"
NORMALIZE_USAGE = "usage: sciontool normalize [--dialect NAME | --dialect-file PATH] [--raw] [FILE...]"
_VALUED = ("--dialect", "--dialect-file")


def _parse(args: list[str], usage: str, flags: tuple[str, ...] = ()) -> tuple[dict[str, str], list[str]]:
    """Options (--dialect, --dialect-file and the given flags) and positional arguments."""
    options: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in _VALUED:
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


def hook_command(args: list[str]) -> None:
    from sciontool_py import gojson
    from sciontool_py.hook import read_stdin, run_hook

    options, positional = _parse(args, HOOK_USAGE)
    if positional and positional[0] in ("ask_user", "task_completed"):
        # Scion's older form, still in harness configs.
        from sciontool_py.status import report_status

        report_status(positional[0], " ".join(positional[1:]))
        return
    if len(positional) > 1:
        raise SciontoolError(f"too many arguments ({HOOK_USAGE})")
    if positional:
        data = gojson.dumps({"hook_event_name": positional[0]}).encode()
    else:
        data = read_stdin()
    out = run_hook(options.get("--dialect"), options.get("--dialect-file"), data)
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()


def status_command(args: list[str]) -> None:
    from sciontool_py.status import report_status

    if not args or args[0].startswith("-"):
        raise SciontoolError(f"missing status type ({STATUS_USAGE})")
    report_status(args[0], " ".join(args[1:]))


def normalize_command(args: list[str]) -> None:
    from sciontool_py.batch import normalize_files
    from sciontool_py.dialect.discover import resolve

    options, files = _parse(args, NORMALIZE_USAGE, flags=("--raw",))
    spec = resolve(options.get("--dialect"), options.get("--dialect-file"))
    normalize_files(spec, files, "--raw" in options)


def guarded(command: str, run: object, args: list[str]) -> int:
    """Run a command so that no input can make it exit 2 or print a traceback.

    Exit 2 means "block this tool call" to Claude-family harnesses; the hook
    only observes, so every failure is a one-line message and exit 1.
    """
    try:
        run(args)  # type: ignore[operator]
    except SciontoolError as exc:
        message = " ".join(str(exc).split("\n"))  # one line, whatever the error carries
        sys.stderr.write(f"sciontool {command}: {message}\n")
        return 1
    except KeyboardInterrupt:
        return 1
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as shell tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # last line of defence for an observer
        sys.stderr.write(f"sciontool {command}: internal error: {type(exc).__name__}: {exc}\n")
        return 1
    return 0


def main() -> int:
    args = sys.argv[1:]
    fast = {"hook": hook_command, "status": status_command, "normalize": normalize_command}
    if args and args[0] in fast and "--help" not in args and "-h" not in args:
        return guarded(args[0], fast[args[0]], args[1:])
    from sciontool_py.cli import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
