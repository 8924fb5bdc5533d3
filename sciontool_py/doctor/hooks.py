"""The checks of one wired harness: its hooks' program is found on the harness's PATH and runs,
and the dialect each hook names is valid by the lookup and validation the hook itself uses."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator

from sciontool_py.doctor.check import Check, failed, passed
from sciontool_py.doctor.wiring import Hook, Wiring
from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Scope

RUN_SECONDS = 10.0  # for `--version`: Python starts in well under a second, even on a loaded machine
MAX_CHECKED = 4  # distinct programs, and dialects: install writes one; more is a hand-edited file
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")  # the shell's NAME=value before a program


def checks(wiring: Wiring, scope: Scope) -> Iterator[Check]:
    name = wiring.harness.name
    hooks = len(wiring.hooks)
    yield passed(name, f"wired in {', '.join(wiring.files)} ({hooks} hook{'s' if hooks != 1 else ''})")
    programs = list({tuple(h.program): h for h in wiring.hooks}.values())
    if len(programs) > MAX_CHECKED:
        text = f"its hooks run {len(programs)} different programs (the first {MAX_CHECKED} are checked)"
        yield failed(name, text, reinstall(name, scope))
    relays = {tuple(h.relay): h for h in wiring.hooks if h.relay}
    for hook in list(relays.values())[:MAX_CHECKED]:
        yield relay_check(hook, wiring, scope)
    for hook in programs[:MAX_CHECKED]:
        found = resolve(hook, wiring, scope)
        yield found
        if found.ok and hook.portable and hook.shell:
            yield portable_relay_check(wiring)
        if found.ok:
            yield runs(hook, wiring, scope)
    chosen: dict[tuple[str | None, str | None], None] = {}
    for hook in wiring.hooks:
        try:
            chosen[dialect_options(hook)] = None
        except SciontoolError as exc:
            yield failed(name, f"`{shlex.join(['hook', *hook.arguments])}`: {exc}", reinstall(name, scope))
            break
    for dialect, dialect_file in list(chosen)[:MAX_CHECKED]:
        yield dialect_check(name, dialect, dialect_file, wiring)


def program(hook: Hook) -> str:
    """The program the hook runs, as the shell would expand it."""
    words = hook.program
    if not hook.shell:
        return words[0]
    named = next((word for word in words if not _ASSIGNMENT.match(word)), words[0])
    return os.path.expandvars(os.path.expanduser(named))


def relay_check(hook: Hook, wiring: Wiring, scope: Scope) -> Check:
    """The shell relay before the program (docs/receiver.md): bash and its script are there (were
    either gone, every hook would fail before sciontool starts)."""
    name = wiring.harness.name
    bash, script = hook.relay
    if not (os.path.isfile(bash) and os.access(bash, os.X_OK)):
        text = f"`{bash}` (the shell relay's bash) is not an executable file"
        return failed(name, text, reinstall(name, scope))
    if not os.path.isfile(script):
        return failed(name, f"`{script}` (the shell relay) is not there", reinstall(name, scope))
    return passed(name, f"the shell relay `{shlex.join(hook.relay)}` is there")


def portable_relay_check(wiring: Wiring) -> Check:
    """A project's lines run the shell relay found on PATH beside sciontool; without it (a
    sciontool-py older than the relay's install as a script) each hook is a Python start."""
    from sciontool_py import __version__
    from sciontool_py.harness.base import RELAY_BASH, RELAY_NAME

    name = wiring.harness.name
    found = shutil.which(RELAY_NAME, path=wiring.path)
    if found is None:
        text = f"`{RELAY_NAME}` is not on {wiring.path_source}: each hook starts Python (about 35 ms) instead"
        return failed(name, text, f"install a sciontool-py that has it ({__version__} or later) there")
    if not os.access(RELAY_BASH, os.X_OK):
        text = f"`{RELAY_BASH}` (the shell relay's bash) is missing: each hook starts Python instead"
        return failed(name, text, f"install bash at {RELAY_BASH}")
    return passed(name, f"the shell relay `{RELAY_NAME}` is {found} (on {wiring.path_source})")


def resolve(hook: Hook, wiring: Wiring, scope: Scope) -> Check:
    name, wanted = wiring.harness.name, program(hook)
    if "/" in wanted:
        try:
            path = os.path.join(wiring.cwd or os.getcwd(), wanted)  # an absolute program stays itself
        except OSError:
            path = wanted
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return passed(name, f"`{wanted}` is an executable file")
        return failed(name, f"`{wanted}` is not an executable file", reinstall(name, scope))
    found = shutil.which(wanted, path=wiring.path)
    if found is None and hook.portable:
        text = (
            f"`{wanted}` is not on {wiring.path_source} ({wiring.path or 'empty'}): the project's hooks "
            "look for it there when they run and, without it, exit 0 without a word, so nothing is "
            "reported"
        )
        here = os.path.dirname(this_command()[0])
        return failed(name, text, f"put the folder that holds it on that PATH (this sciontool's: {here})")
    if found is None:
        text = f"`{wanted}` is not on {wiring.path_source} ({wiring.path or 'empty'})"
        return failed(name, text, reinstall(name, scope))
    return passed(name, f"`{wanted}` is {found} (on {wiring.path_source})")


def runs(hook: Hook, wiring: Wiring, scope: Scope) -> Check:
    """`PROGRAM --version`, as the harness would start it: its shell (or none), its PATH, its folder."""
    from sciontool_py import __version__
    from sciontool_py.emitter import runner

    shown = f"`{hook.prefix} --version`"
    line = f"{hook.prefix} --version" if hook.shell else shlex.join([*hook.program, "--version"])
    if wiring.cwd is not None:
        line = f"cd {shlex.quote(wiring.cwd)} && {line}"
    outcome = runner.run(line, b"", RUN_SECONDS, {**os.environ, "PATH": wiring.path})
    said = outcome.output.decode("utf-8", "replace").strip().splitlines()
    name = wiring.harness.name
    if outcome.error is not None:
        last = f": {said[-1][:200]}" if said else ""
        return failed(name, f"{shown} failed ({outcome.error}){last}", reinstall(name, scope))
    version = next((text for text in said if text.startswith("sciontool ")), None)
    if version is None:
        printed = said[0][:200] if said else "nothing"
        return failed(name, f"{shown} printed {printed!r}, not sciontool's version", reinstall(name, scope))
    mine = f"sciontool {__version__}"
    return passed(name, f"{shown} runs: {version}" + ("" if version == mine else f" (this doctor: {mine})"))


def dialect_options(hook: Hook) -> tuple[str | None, str | None]:
    """(--dialect, --dialect-file) as the hook parses its arguments (a shell expands the file's
    `~` and `$VAR` first)."""
    from sciontool_py.fastpath import HOOK_USAGE, HelpRequested, parse_args

    try:
        options, _ = parse_args(hook.arguments, HOOK_USAGE, valued=("--event",))
    except HelpRequested:
        raise SciontoolError("asks for help instead of receiving the envelope") from None
    dialect_file = options.get("--dialect-file")
    if dialect_file and hook.shell:
        dialect_file = os.path.expandvars(os.path.expanduser(dialect_file))
    return options.get("--dialect"), dialect_file


def dialect_check(name: str, dialect: str | None, dialect_file: str | None, wiring: Wiring) -> Check:
    """The dialect the hook will use, found and validated as the hook does (no cache is written)."""
    from sciontool_py.dialect.discover import DEFAULT_DIALECT, find_dialect
    from sciontool_py.dialect.load import load_dialect

    try:
        if dialect_file:
            # A relative file is relative to the folder the harness runs its hooks in.
            path = os.path.join(wiring.cwd, dialect_file) if wiring.cwd else dialect_file
            spec = load_dialect(path, write_cache=False)
        else:
            spec = find_dialect(dialect or DEFAULT_DIALECT, write_cache=False)
    except SciontoolError as exc:
        if dialect_file:
            fix = f"`sciontool dialect check {shlex.quote(path)}` lists its problems: correct the file"
        else:
            search = os.environ.get("SCION_DIALECTS_PATH")
            where = f" (SCION_DIALECTS_PATH={search})" if search else ""
            fix = f"`sciontool dialect list` shows each file the name may mean{where} and its problem"
        return failed(name, f"dialect {dialect_file or dialect or DEFAULT_DIALECT}: {exc}", fix)
    return passed(name, f"dialect {spec.name} is valid ({spec.source})")


def this_command() -> list[str]:
    """How to run the sciontool running now from anywhere: its absolute path, or its Python with
    -m when it was started so."""
    started = sys.argv[0] if sys.argv else ""
    if os.path.basename(started) == "sciontool" and os.path.isfile(started):
        return [os.path.abspath(started)]
    return [sys.executable, "-m", "sciontool_py"]


def reinstall(name: str, scope: Scope) -> str:
    this = shlex.join(this_command())
    where = "--user" if scope.project is None else f"--project {shlex.quote(os.path.abspath(scope.project))}"
    return f"reinstall with `{this} harness install {name} {where} --command {shlex.quote(this)}`"
