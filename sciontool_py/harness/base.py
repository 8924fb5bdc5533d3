"""What every harness module shares: where to write, what a change is, the settings-file harness."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from typing import ClassVar

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.files import MAX_SETTINGS_BYTES, read_text, resolve_target
from sciontool_py.harness.hookjson import HookSet, KeyPath
from sciontool_py.harness.jsonedit import Document

DEFAULT_COMMAND = "sciontool"
# The shell relay as installed beside the `sciontool` script (pyproject.toml's shared-scripts):
# a project's hooks find it on PATH, naming no path of the machine that installed them.
RELAY_NAME = "sciontool-relay"
RELAY_BASH = "/bin/bash"  # the relay's interpreter, its first line
EMPTIED = "; nothing else was in it, so the file is removed"


@dataclass(frozen=True)
class Scope:
    """Where to wire a harness (a project folder, or the user's own settings) and with what."""

    project: str | None  # the project folder; None means the user's settings
    command: str = DEFAULT_COMMAND  # what runs sciontool: a name on PATH or an absolute path
    force: bool = False
    relay: str = ""  # what runs before it in a shell command line: the shell relay, or nothing

    @property
    def portable(self) -> bool:
        """A project's files are committed and run on teammates' machines and in CI: their
        lines find sciontool and its relay on PATH at run time, and do nothing without it."""
        return self.project is not None

    @property
    def program(self) -> str:
        """What a shell command line of the hooks starts with (the user's settings)."""
        return f"{self.relay} {self.command}" if self.relay else self.command

    def shell_line(self, arguments: str) -> str:
        """The hook `sciontool ARGUMENTS` as a shell command line (settings files)."""
        if self.portable:
            return self._guarded(arguments, bash=False)
        return f"{self.program} {arguments}"

    def hook_command(self, dialect: str) -> str:
        """The hook as a shell command line (settings files)."""
        return self.shell_line(f"hook --dialect={dialect}")

    def bash_hook_command(self, dialect: str) -> str:
        """The hook as a shell command line for a harness that runs it with `bash -c` (Codex,
        Gemini CLI): that bash reads the shell relay itself, a bash start (about 1 ms) less a hook
        than hook_command's line; any other shell starts the relay's bash, as that line does."""
        if self.portable:
            return self._guarded(f"hook --dialect={dialect}", bash=True)
        if not self.relay:
            return self.hook_command(dialect)
        script = shlex.quote(shlex.split(self.relay)[1])
        tail = f"{self.command} hook --dialect={dialect}"
        return f'[ -n "${{BASH_VERSION-}}" ] && . {script} {tail} || exec {self.relay} {tail}'

    def _guarded(self, arguments: str, bash: bool) -> str:
        """A POSIX sh line: without sciontool on PATH, exit 0 without a word (a teammate who has
        none sees no hook error); with it, through the relay beside it when PATH has that too
        (an older sciontool-py has none: then sciontool itself). `command -v` is the shell's own
        lookup: no process starts before the relay's."""
        hook = f"{self.command} {arguments}"
        guard = f"command -v {shlex.quote(shlex.split(self.command)[0])} >/dev/null || exit 0"
        if not self.relay:
            return f"{guard}; exec {hook}"
        # The relay's first line is `#!/bin/bash` (`/usr/bin/env bash` cost 0.9 ms a hook more);
        # where that is missing (NixOS), sciontool itself.
        relay = f"[ -x {RELAY_BASH} ] && exec {RELAY_NAME} {hook}"
        if bash:  # `.` finds the relay on PATH, as `command -v` did
            relay = f'{{ [ -n "${{BASH_VERSION-}}" ] && . {RELAY_NAME} {hook} || {relay}; }}'
        return f"{guard}; command -v {RELAY_NAME} >/dev/null && {relay}; exec {hook}"

    def hook_argv(self, dialect: str) -> list[str]:
        """The hook as a program and its arguments (Codex's notify, the opencode plugin)."""
        return [*shlex.split(self.command), "hook", f"--dialect={dialect}"]


@dataclass
class Edit:
    """One file's change: its text before and after (None: absent), and what it means."""

    path: str
    before: str | None
    after: str | None
    summary: str  # what changed, e.g. "added sciontool hooks for Stop, SessionEnd"
    notes: list[str] = field(default_factory=list)  # said after the change, e.g. trust
    installs: bool = False  # remember what this change creates (file, folders, created_keys)
    uninstalls: bool = False  # undo what the install of this file created, then forget it
    created_keys: list[KeyPath] = field(default_factory=list)


def routed_events(dialect: str, fired: tuple[str, ...]) -> list[str]:
    """The events the harness fires that the dialect maps, read now: a newly mapped event follows."""
    from sciontool_py.dialect.discover import find_dialect

    mapped = find_dialect(dialect, write_cache=False).mappings  # install writes no cache
    return [event for event in fired if event in mapped]


def user_home() -> str:
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if not home or home == "~":
        raise SciontoolError("HOME is not set: cannot find the user's settings")
    return home


class Harness:
    """A harness `sciontool harness` can wire: install, uninstall, show."""

    name = ""
    dialect = ""

    def target(self, scope: Scope) -> tuple[str, str]:
        """(folder the file must stay inside, the file's path relative to it)."""
        raise NotImplementedError

    def install(self, scope: Scope) -> list[Edit]:
        raise NotImplementedError

    def uninstall(self, scope: Scope) -> list[Edit]:
        raise NotImplementedError

    def show(self, scope: Scope) -> str:
        raise NotImplementedError


class TextHarness(Harness):
    """A harness whose file install edits as text (Vibe's TOML, Hermes's YAML): uninstall is the
    file without ours, as _unwired finds it, and the file goes only when install made it and
    nothing else is left."""

    max_bytes = MAX_SETTINGS_BYTES  # what the file is read up to

    def _unwired(self, text: str, path: str) -> tuple[str, dict[str, object]]:
        """The text without ours, and its settings (exactly the old ones less ours)."""
        raise NotImplementedError

    def uninstall(self, scope: Scope) -> list[Edit]:
        from sciontool_py.harness import record

        path = resolve_target(*self.target(scope))
        before = read_text(path, self.max_bytes)
        if before is None:
            return [Edit(path, None, None, "no such file")]
        after, _ = self._unwired(before, path)
        if after == before:
            return [Edit(path, before, before, "no sciontool hooks")]
        summary = "removed sciontool hooks"
        if not after and record.created(path).get("file"):
            return [Edit(path, before, None, summary + EMPTIED, uninstalls=True)]
        return [Edit(path, before, after, summary, uninstalls=True)]


class SettingsHarness(Harness):
    """A harness whose hooks live in a JSON settings file under `"hooks"`."""

    fired: tuple[str, ...] = ()  # every event the harness fires, in its lifecycle order
    # Events the dialect maps but install does not wire, and why: each costs the harness a wait
    # for a hook process, and all but one of their firings say nothing new.
    unwired: ClassVar[dict[str, str]] = {}
    project_file = ""  # relative to the project folder
    user_file = ""  # relative to the user's home
    notes: tuple[str, ...] = ()
    jsonc = False  # the harness reads // and /* */ comments in the file
    command_key = "command"  # the entry's member holding the command line
    root = "hooks"  # the top-level key holding event -> entries
    preamble: ClassVar[dict[str, object]] = {}  # keys a new file starts with

    def entry(self, event: str, command: str) -> dict[str, object]:
        raise NotImplementedError

    def command(self, scope: Scope, event: str) -> str:
        """The hook command for one event (the same for every event by default)."""
        return scope.hook_command(self.dialect)

    def target(self, scope: Scope) -> tuple[str, str]:
        if scope.project is None:
            return user_home(), self.user_file
        return scope.project, self.project_file

    def hook_set(self, scope: Scope, wired: bool = True) -> HookSet:
        """The entries install writes (wired), or those of the events it no longer wires."""
        events = [e for e in routed_events(self.dialect, self.fired) if (e in self.unwired) != wired]
        commands = {e: self.command(scope, e) for e in events}
        entries = {e: self.entry(e, commands[e]) for e in events}
        return HookSet(entries, commands, self.command_key, self.root)

    def install(self, scope: Scope) -> list[Edit]:
        return [self.merge_hook_set(scope, list(self.notes))]

    def merge_hook_set(self, scope: Scope, notes: list[str]) -> Edit:
        """The settings file's edit that wires the hooks, and takes out the unwired events' ones."""
        path = resolve_target(*self.target(scope))
        stale = self.hook_set(scope, wired=False) if self.unwired else None
        return merge_hooks(path, self.hook_set(scope), notes, self.jsonc, self.preamble, stale)

    def uninstall(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        hooks = self.hook_set(scope)
        if self.unwired:  # what an earlier install wired goes too
            hooks.merge(self.hook_set(scope, wired=False))
        return [unmerge_hooks(path, hooks, self.jsonc, self.preamble)]

    def show(self, scope: Scope) -> str:
        root, relative = self.target(scope)
        hooks = self.hook_set(scope)
        body = {**self.preamble, self.root: {e: [entry] for e, entry in hooks.entries.items()}}
        return f"# merged into {os.path.join(root, relative)}\n{json.dumps(body, indent=2)}\n"


class ClaudeShapedHarness(SettingsHarness):
    """Claude Code's hooks format, which Droid and Qwen Code took over: one entry per event,
    `{"matcher": "*", "hooks": [...]}` for the events matched against the tool name."""

    tool_events: frozenset[str] = frozenset()  # the events whose matcher is the tool name

    def hook(self, event: str, command: str) -> dict[str, object]:
        """The hook object in EVENT's entry."""
        return {"type": "command", "command": command}

    def entry(self, event: str, command: str) -> dict[str, object]:
        hook = self.hook(event, command)
        if event in self.tool_events:
            return {"matcher": "*", "hooks": [hook]}
        return {"hooks": [hook]}


def merge_hooks(
    path: str,
    hooks: HookSet,
    notes: list[str],
    jsonc: bool = False,
    preamble: dict[str, object] | None = None,
    stale: HookSet | None = None,
) -> Edit:
    """Add HOOKS to the file; remove STALE ones (an earlier install wired them, this one does not)."""
    from sciontool_py.harness import record

    before = read_text(path)
    doc = Document(before if before is not None else "{}\n", path, jsonc)
    if before is None:
        for key, value in (preamble or {}).items():
            doc.add(doc.root, key, value)
    changed, created = hooks.add(doc)
    dropped = stale.remove(doc, record.keys(path)) if stale is not None and before is not None else []
    if not changed and not dropped:
        return Edit(path, before, before, "already wired", notes)
    summary = f"added sciontool hooks for {', '.join(changed)}" if changed else "kept sciontool hooks"
    if dropped:
        summary += f"; removed those for {', '.join(dropped)}, no longer wired"
    return Edit(path, before, doc.text, summary, notes, installs=True, created_keys=created)


def unmerge_hooks(
    path: str, hooks: HookSet, jsonc: bool = False, preamble: dict[str, object] | None = None
) -> Edit:
    from sciontool_py.harness import record

    before = read_text(path)
    if before is None:
        return Edit(path, None, None, "no such file")
    doc = Document(before, path, jsonc)
    removed = hooks.remove(doc, record.keys(path))
    if not removed:
        return Edit(path, before, before, "no sciontool hooks")
    summary = f"removed sciontool hooks for {', '.join(removed)}"
    if record.created(path).get("file") and doc.data == (preamble or {}):
        return Edit(path, before, None, summary + EMPTIED, uninstalls=True)  # install made it
    return Edit(path, before, doc.text, summary, uninstalls=True)
