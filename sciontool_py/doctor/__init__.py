"""`sciontool doctor`: is this set-up one whose hooks will run and report, and if not, why.

One line per check, `ok` or `FAIL` with the fix beside it, printed as each
is made: for each harness wired in the scope (wiring), its hook's program on
the harness's PATH, a run of it, and the dialect it names (hooks); the
state folder (state); the telemetry endpoint and the hub (remote). Doctor
checks the environment it runs in: run it where the harness runs. It
writes nothing but its own temp file, and every check is bounded in time.
Never imported by the hook.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

from sciontool_py.doctor.check import Check, failed
from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Scope


def scope_of(project: str | None, user: bool) -> Scope:
    """The scope to check, as install's options name it; the project as an absolute path."""
    if user and project is not None:
        raise SciontoolError("--project and --user exclude each other")
    if user:
        return Scope(None)
    try:
        folder = os.path.abspath(project or ".")
    except FileNotFoundError:
        raise SciontoolError("the current folder no longer exists: pass --project DIR (absolute)") from None
    if not os.path.isdir(folder):
        raise SciontoolError(f"--project {project}: no such folder")
    return Scope(folder)


def run(scope: Scope, emit: Callable[[str], None]) -> int:
    """Every check's line through emit, then a count; 1 when any failed, else 0."""
    made = failures = 0
    for check in checks(scope):
        emit(check.line())
        made += 1
        failures += not check.ok
    emit(f"{made} checks, {f'{failures} failed' if failures else 'all ok'}")
    return 1 if failures else 0


def checks(scope: Scope) -> Iterator[Check]:
    from sciontool_py.doctor import hooks, remote, state, wiring
    from sciontool_py.fs import home_dir

    env = dict(os.environ)
    wired, problems = wiring.find(scope, env)
    yield from problems
    if not wired and not problems:
        where = "--user" if scope.project is None else f"--project {scope.project}"
        yield failed("harnesses", f"none wired ({where})", f"`sciontool harness install NAME {where}`")
    for found in wired:
        yield from hooks.checks(found, scope)
    home = home_dir()
    yield state.check(home)
    yield from remote.telemetry(env)
    yield from remote.hub(home, env, time.time())
