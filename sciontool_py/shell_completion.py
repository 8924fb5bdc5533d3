"""`--install-completion [SHELL]` and `--show-completion [SHELL]`, handled before typer.

Typer's own options ignore a shell named after them (`--install-completion zsh` from bash
installed bash completion) and print their errors unprefixed ("Shell sh not supported."). These
take the shell when given, detect it otherwise, and fail with one `sciontool ...:` line.
"""

from __future__ import annotations

from sciontool_py.errors import SciontoolError

SHELLS = ("bash", "zsh", "fish")
_PROG = "sciontool"
_COMPLETE_VAR = "_SCIONTOOL_COMPLETE"


def _detected_shell() -> str:
    """The shell this runs under, as typer would detect it; "" when it cannot tell."""
    try:
        import shellingham  # type: ignore[import-untyped]  # typer's own dependency for detection

        name, _ = shellingham.detect_shell()
        return str(name).lower()
    except (ImportError, OSError):  # ShellDetectionFailure is an OSError
        return ""


def _shell(option: str, rest: list[str]) -> str:
    if len(rest) > 1:
        raise SciontoolError(f"at most one shell (got {' '.join(rest)})")
    if rest:
        shell = rest[0]
    else:
        shell = _detected_shell()
        if not shell:
            raise SciontoolError(f"cannot tell which shell this is: name one ({option} {'|'.join(SHELLS)})")
    if shell not in SHELLS:
        raise SciontoolError(f"shell {shell!r} is not supported (supported: {', '.join(SHELLS)})")
    return shell


def run(option: str, rest: list[str]) -> str:
    """Print the script or install it; returns what to print on stdout."""
    from typer._completion_shared import get_completion_script, install

    shell = _shell(option, rest)
    if option == "--show-completion":
        return get_completion_script(prog_name=_PROG, complete_var=_COMPLETE_VAR, shell=shell) + "\n"
    _, path = install(shell=shell, prog_name=_PROG, complete_var=_COMPLETE_VAR)
    return f"{shell} completion installed in {path}\nCompletion takes effect in a new shell\n"
