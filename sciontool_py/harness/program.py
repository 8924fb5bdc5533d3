"""What the hooks run to reach sciontool: the bare name when PATH finds it, else this program's path.

A harness runs its hooks through its own PATH. Installed from a venv that is not
activated, a bare `sciontool` would fail every hook with `sciontool: not found`
(GoogleCloudPlatform/scion#1842), so without `--command` the user's hooks get the
absolute path of the program running install whenever PATH (this one, the best
guess at the harness's) does not find the name. A project's files are committed:
they keep the name, and their lines do nothing where PATH lacks it (base.Scope).
A `--command` the user gives is written as given, with a warning when its
program is not found either.

On Linux, with bash, the shell command lines put the shell relay before it
(sciontool_py/helper/relay.bash, docs/receiver.md): a hook then costs the harness a
bash start where the helper runs, instead of a Python start.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import DEFAULT_COMMAND


def running_program() -> str:
    """This program as a command prefix: the `sciontool` script that runs, or this Python with
    `-m sciontool_py` (how `python -m sciontool_py` and an embedding process run it)."""
    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script).startswith(DEFAULT_COMMAND) and os.access(script, os.X_OK):
        return shlex.quote(os.path.abspath(script))
    return f"{shlex.quote(sys.executable)} -m sciontool_py"


def relay_prefix() -> str:
    """`BASH RELAY.BASH`, quoted, for the hooks' shell command lines; "" where the relay cannot
    work (no /proc to hand the hook's streams over, no bash)."""
    # The helper's relay, found as a file: the harness room imports nothing of the helper's.
    relay = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helper", "relay.bash")
    bash = shutil.which("bash")
    if not sys.platform.startswith("linux") or bash is None or not os.path.isfile(relay):
        return ""
    return f"{shlex.quote(os.path.abspath(bash))} {shlex.quote(relay)}"


def hook_program(command: str | None, project: bool = False) -> tuple[str, str]:
    """(the command prefix the hooks run, a line to tell the user or ''), for `--command` given or
    None (not given), in a project's files (project) or the user's."""
    if command is None:
        if shutil.which(DEFAULT_COMMAND):
            return DEFAULT_COMMAND, ""
        if project:  # committed, it runs on other machines: only the name can be right there
            return DEFAULT_COMMAND, (
                f"note: `{DEFAULT_COMMAND}` is not on PATH here, and the project's hooks look for it "
                "there when they run: until it is, they do nothing on this machine (`sciontool "
                "doctor` says so)"
            )
        running = running_program()
        return running, (
            f"note: `{DEFAULT_COMMAND}` is not on PATH, so the hooks run {running}; pass "
            f"--command {DEFAULT_COMMAND} to write the bare name (for a harness whose PATH has it)"
        )
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        raise SciontoolError(f"--command {command!r}: not a command line") from None
    if os.sep in program or shutil.which(program):
        return command, ""
    return command, (
        f"warning: `{program}` is not on PATH: unless the harness's PATH has it, every hook fails "
        f"with `{program}: not found`; pass --command with its absolute path (this one is "
        f"{running_program()})"
    )
