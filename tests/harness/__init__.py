"""What the harness tests share: a project's hook line as `harness install --project` writes it."""

from __future__ import annotations

import shlex


def project_line(program: str, arguments: str, bash: bool = False) -> str:
    """A project's line (docs/harnesses.md, portable wiring): sciontool and its relay looked up on
    PATH when it runs, exit 0 without either; `bash` for a harness that runs it with `bash -c`."""
    from sciontool_py.harness.program import relay_prefix

    hook = f"{program} {arguments}"
    guard = f"command -v {shlex.split(program)[0]} >/dev/null || exit 0"
    if not relay_prefix():
        return f"{guard}; exec {hook}"
    relay = f"[ -x /bin/bash ] && exec sciontool-relay {hook}"
    if bash:
        relay = '{ [ -n "${BASH_VERSION-}" ] && . sciontool-relay ' + hook + " || " + relay + "; }"
    return f"{guard}; command -v sciontool-relay >/dev/null && {relay}; exec {hook}"
