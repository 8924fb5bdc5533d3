"""The `sciontool` entry point: the hot commands to fastpath, everything else to the typer app."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.log.writer import AgentLog


def entry() -> int:
    """The `sciontool` program (its console script, `python -m sciontool_py`): main(), except
    that a hook ends at once, without the interpreter's teardown: about 3 ms of a hook the
    harness waits for, and no thread the hook left (a hub call abandoned at its deadline) can
    wake into a finalizing interpreter. Nothing of a hook is left in this process to finish."""
    return main(exit_hook=True)


def main(exit_hook: bool = False) -> int:
    from sciontool_py.console import ensure_std_fds

    ensure_std_fds()
    try:
        import fcntl  # noqa: F401  # the hook locks HOME's files with it; the hook imports it anyway
    except ModuleNotFoundError:  # Windows: one line, before any command half-runs
        sys.stderr.write(
            "sciontool: runs on POSIX systems only (Linux, macOS): this Python has no fcntl module\n"
        )
        return 1
    args = sys.argv[1:]
    if args and args[0] == "hook":
        relayed = _relay(args[1:])  # the helper runs it in its turn (turns.py)
        if relayed is not None:
            if exit_hook:
                _exit_now(relayed)
            return relayed
        from sciontool_py import fastpath, telemetry, turns
        from sciontool_py.helper import client

        claim = client.claim_helper(args[1:])  # no helper answered: this process leaves one behind
        if claim is not None:
            telemetry.start_later()  # the helper starts the telemetry worker once its hooks go quiet
        origin = turns.wait()  # here: after the hooks its harness started before it, not waited for

        def hook(args: list[str], log: AgentLog) -> None:
            fastpath.hook_command(args, log, origin)

        code = fastpath.guarded("hook", hook, args[1:])
        if claim is not None:
            from sciontool_py.helper import server

            # Forked with this process's modules; no stdio here after it.
            if not server.adopt(*claim):
                from sciontool_py.log.writer import AgentLog

                telemetry.start_waiting(AgentLog(claim[0], quiet=True))  # no helper: now, then
        if exit_hook and "coverage" not in sys.modules:
            _exit_now(code)  # (coverage.py, measuring the suite, saves its data in the teardown)
        return code
    if args and args[0] in ("status", "normalize"):
        from sciontool_py import fastpath

        return fastpath.run(args[0], args[1:])
    if args and args[0] == "run":  # its command's arguments are the command's, never typer's
        from sciontool_py.run import main as run_main

        return run_main(args[1:])
    from sciontool_py.cli import run

    return run(args)


def _exit_now(code: int) -> None:
    import os

    from sciontool_py.console import flush_std

    flush_std()
    os._exit(code)


def _relay(args: list[str]) -> int | None:
    """The hook run by HOME's helper (helper/client.py): its exit status; None when this process
    must run it, on its stdin (or what the helper read of it, should it hand it back)."""
    from sciontool_py.helper import client

    try:
        return client.relay(args)
    except client.Unrelayed as back:
        said = back.error
        if said:  # stdin refused the envelope: said as the hook says it
            from sciontool_py import fastpath
            from sciontool_py.errors import EventError

            def refused(args: list[str], log: object) -> None:
                raise EventError(said)

            return fastpath.guarded("hook", refused, args)
        import io

        sys.stdin = io.TextIOWrapper(io.BytesIO(back.data))  # what the helper read, for this process
        return None


if __name__ == "__main__":
    sys.exit(entry())
