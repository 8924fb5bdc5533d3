"""What `harness install` wrote for a scope: each wired harness, its files and its hook commands.

The files are the ones install, show and uninstall use (each harness's
target for the scope), read without following a link out of their folder
and without blocking on a FIFO. A hook is ours as uninstall knows it: a
command whose words are PROGRAM... `hook` ... `--dialect[-file]`, whatever
program runs it. The dialect is not read here: a broken one must not hide
the wiring it breaks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sciontool_py.doctor.check import Check, failed
from sciontool_py.errors import SciontoolError
from sciontool_py.harness import INSTALLABLE, find_harness
from sciontool_py.harness.base import Harness, Scope, SettingsHarness, user_home
from sciontool_py.harness.files import read_text, resolve_target

if TYPE_CHECKING:
    from collections.abc import Callable

    Reader = Callable[[str, str], "list[Hook | None]"]  # a file's text and path -> our hooks in it

# The opencode bridge's line holding the hook's argv (harness/opencode_bridge.js).
_BRIDGE_COMMAND = re.compile(r"^const COMMAND = (\[.*\]);$", re.M)
_DIALECT_OPTIONS = ("--dialect", "--dialect-file")
# A line that reads the shell relay into the harness's bash: `[ -n "${BASH_VERSION-}" ] && .
# RELAY.BASH PROGRAM hook ... || exec BASH RELAY.BASH PROGRAM hook ...`.
_IN_BASH = ["[", "-n", "${BASH_VERSION-}", "]", "&&", "."]
_OR_EXEC = " || exec "
# A project's line (Scope._guarded): `command -v PROGRAM >/dev/null || exit 0; ...; exec PROGRAM
# hook ...`, whose last statement is the hook as it runs without the relay.
_GUARD = "command -v "
_LAST_EXEC = "; exec "
_NOTIFY_ARGUMENT = ' "$@"'  # Codex's notify passes its JSON on


@dataclass(frozen=True)
class Hook:
    """One hook command as the harness runs it."""

    program: list[str]  # the words before `hook`: what runs sciontool
    arguments: list[str]  # the words after `hook`
    shell: bool  # run by /bin/sh -c (a settings file's line), or exec'd as an argv
    prefix: str  # the program as written: the shell expands it as it stands
    relay: list[str] = field(default_factory=list)  # `BASH RELAY.BASH` before it, when wired so
    portable: bool = False  # a project's line: found on PATH when it runs, nothing done without it


@dataclass
class Wiring:
    """A harness wired in the scope: where, its hooks, and the PATH they are looked up on."""

    harness: Harness
    files: list[str] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    cwd: str | None = None  # the folder hooks run in: the project's (None: wherever the harness starts)
    path: str = ""
    path_source: str = "the current PATH"


def find(scope: Scope, env: dict[str, str]) -> tuple[list[Wiring], list[Check]]:
    """Every harness with a hook of ours in the scope's files, and a failure per file that exists
    but cannot be read as the harness reads it."""
    found: list[Wiring] = []
    problems: list[Check] = []
    for name in INSTALLABLE:
        harness = find_harness(name)
        try:
            wiring = _wiring(harness, scope)
            if wiring is not None:
                wiring.path, wiring.path_source = harness_path(harness, scope, env)
                found.append(wiring)
        except SciontoolError as exc:
            fix = "repair it, or make it a regular file inside its folder (as `harness install` writes it)"
            problems.append(failed(name, str(exc), fix))
    return found, problems


def _wiring(harness: Harness, scope: Scope) -> Wiring | None:
    try:
        sources = _sources(harness, scope)
    except SciontoolError:
        return None  # the harness has no file in this scope (core-agent --user, hermes --project, ...)
    wiring = Wiring(harness, cwd=sources[0][0][0] if scope.project is not None else None)
    for (root, relative), read in sources:
        path = resolve_target(root, relative)
        text = read_text(path)
        hooks = [hook for hook in read(text, path) if hook is not None] if text is not None else []
        if hooks:
            wiring.files.append(path)
            wiring.hooks.extend(hooks)
    return wiring if wiring.hooks else None


def _sources(harness: Harness, scope: Scope) -> list[tuple[tuple[str, str], Reader]]:
    """Each file install writes for the harness in the scope (its folder, its path there), and
    the reader of our hooks in it."""
    from sciontool_py.harness.codex import Codex
    from sciontool_py.harness.hermes import Hermes
    from sciontool_py.harness.mistral_vibe import MistralVibe
    from sciontool_py.harness.opencode import Opencode

    if isinstance(harness, SettingsHarness):
        settings = harness

        def read_settings(text: str, path: str) -> list[Hook | None]:
            data = _json(text, path, settings.jsonc)
            return [_hook(line, True) for line in _json_commands(data, settings.root, settings.command_key)]

        sources: list[tuple[tuple[str, str], Reader]] = [(harness.target(scope), read_settings)]
        if isinstance(harness, Codex):
            sources.append((harness.layer_file(scope, "config.toml"), _notify))
        return sources
    if isinstance(harness, Opencode):
        return [(harness.target(scope), _bridge)]
    if isinstance(harness, MistralVibe):
        return [(harness.target(scope), _vibe)]
    if isinstance(harness, Hermes):
        return [(harness.target(scope), _hermes)]
    raise AssertionError(f"no reader for {harness.name}")  # a new harness: teach doctor its file


def _json(text: str, path: str, comments: bool) -> dict[str, object]:
    if comments:
        from sciontool_py.harness.jsonedit import blank_comments

        text = blank_comments(text)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SciontoolError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SciontoolError(f"{path}: not a JSON object")
    return data


def _json_commands(data: dict[str, object], root: str, key: str) -> list[str]:
    """Every command line under data[root]: EVENT -> [entry], an entry a hook or a group of them."""
    hooks = data.get(root)
    found: list[str] = []
    for entries in hooks.values() if isinstance(hooks, dict) else ():
        for entry in entries if isinstance(entries, list) else ():
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            for hook in [entry, *(inner if isinstance(inner, list) else ())]:
                command = hook.get(key) if isinstance(hook, dict) else None
                if isinstance(command, str):
                    found.append(command)
    return found


def _notify(text: str, path: str) -> list[Hook | None]:
    from sciontool_py.harness.tomledit import _parse

    notify = _parse(text, path).get("notify")
    if isinstance(notify, list) and all(isinstance(word, str) for word in notify):
        if len(notify) == 4 and notify[:2] == ["sh", "-c"]:  # a project's: its line, run by sh
            return [_hook(notify[2], True)]
        return [_argv_hook(notify)]
    return []


def _bridge(text: str, path: str) -> list[Hook | None]:
    match = _BRIDGE_COMMAND.search(text)
    try:
        argv = json.loads(match.group(1)) if match else None
    except ValueError:
        argv = None
    if not (isinstance(argv, list) and all(isinstance(word, str) for word in argv)):
        raise SciontoolError(f"{path}: the bridge's `const COMMAND = [...]` line is missing or damaged")
    return [_argv_hook(argv)]


def _vibe(text: str, path: str) -> list[Hook | None]:
    from sciontool_py.harness.tomledit import _parse

    hooks = _parse(text, path).get("hooks")
    entries = hooks if isinstance(hooks, list) else []
    return [
        _hook(e["command"], True)
        for e in entries
        if isinstance(e, dict) and isinstance(e.get("command"), str)
    ]


def _hermes(text: str, path: str) -> list[Hook | None]:
    import yaml

    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError:
        raise SciontoolError(f"{path}: not valid YAML") from None
    hooks = data.get("hooks") if isinstance(data, dict) else None
    found: list[Hook | None] = []
    for entries in hooks.values() if isinstance(hooks, dict) else ():
        for entry in entries if isinstance(entries, list) else ():
            command = entry.get("command") if isinstance(entry, dict) else None
            if isinstance(command, str):
                found.append(_hook(command, False))  # split like a shell line, run without a shell
    return found


def _hook(line: str, shell: bool) -> Hook | None:
    """The hook a command line runs, when it is ours; None for any other command."""
    if line.startswith(_GUARD) and _LAST_EXEC in line:
        tail = line[line.rindex(_LAST_EXEC) + len(_LAST_EXEC) :].removesuffix(_NOTIFY_ARGUMENT)
        hook = _hook(tail, shell)
        return replace(hook, portable=True) if hook is not None else None
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if words[: len(_IN_BASH)] == _IN_BASH and _OR_EXEC in line:
        # Read into the harness's bash (Scope.bash_hook_command); what another shell runs is
        # the same hook through the relay's own bash, and that is the one to check.
        line = line[line.rindex(_OR_EXEC) + len(_OR_EXEC) :]
        words = shlex.split(line)
    at = _hook_word(words)
    if at is None:
        return None
    relay, words, at = _relayed(words, at)
    if relay:
        line = _after(line, relay)
    return Hook(words[:at], words[at + 1 :], shell, _written_prefix(line, words[:at]), relay)


def _relayed(words: list[str], at: int) -> tuple[list[str], list[str], int]:
    """(install's shell relay, `BASH RELAY.BASH`, or []; the words after it; where `hook` is in them)."""
    if at > 2 and os.path.basename(words[0]) == "bash" and os.path.basename(words[1]) == "relay.bash":
        return words[:2], words[2:], at - 2
    return [], words, at


def _after(line: str, words: list[str]) -> str:
    """The rest of LINE after its first words, as written."""
    for at, char in enumerate(line):
        if char.isspace():
            try:
                if shlex.split(line[:at]) == words:
                    return line[at:].strip()
            except ValueError:
                continue
    return line


def _argv_hook(argv: list[str]) -> Hook | None:
    at = _hook_word(argv)
    if at is None:
        return None
    relay, argv, at = _relayed(argv, at)  # Codex's notify runs through it too
    return Hook(argv[:at], argv[at + 1 :], False, shlex.join(argv[:at]), relay)


def _hook_word(words: list[str]) -> int | None:
    """Where `hook` is in a command of ours: after a program, before a --dialect option."""
    for at in range(1, len(words)):
        if words[at] == "hook":
            rest = words[at + 1 :]
            if any(word.partition("=")[0] in _DIALECT_OPTIONS for word in rest):
                return at
            return None
    return None


def _written_prefix(line: str, program: list[str]) -> str:
    """The program part of the line as written (`$HOME/bin/sciontool`, `~/...`): the text before
    the ` hook ` whose words are the program's."""
    start = 0
    while (at := line.find(" hook", start)) >= 0:
        try:
            if shlex.split(line[:at]) == program:
                return line[:at].strip()
        except ValueError:
            pass
        start = at + 1
    return shlex.join(program)


def harness_path(harness: Harness, scope: Scope, env: dict[str, str]) -> tuple[str, str]:
    """The PATH the harness's hooks get, and where it comes from: the current one, unless the
    harness's own settings set another (Claude Code's `env`, whose PATH replaces the inherited
    one, literally: no `$PATH` in it is expanded)."""
    current = env.get("PATH", os.defpath)
    if harness.name != "claude":
        return current, "the current PATH"
    home = user_home()
    files = [os.path.join(home, ".claude", "settings.json")]
    if scope.project is not None:  # a project's settings win over the user's, the local file first
        folder = os.path.abspath(scope.project)
        files[:0] = [
            os.path.join(folder, ".claude", name) for name in ("settings.local.json", "settings.json")
        ]
    for path in files:
        try:
            text = read_text(path)
            data = _json(text, path, False) if text is not None else {}
        except SciontoolError:
            continue  # a broken file is reported where it is wired, or Claude Code says so
        settings_env = data.get("env")
        if isinstance(settings_env, dict) and isinstance(settings_env.get("PATH"), str):
            return settings_env["PATH"], f"the PATH {path} sets in its env"
    return current, "the current PATH"
