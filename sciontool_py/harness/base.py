"""What every harness module shares: where to write, what a change is, the settings-file harness."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.files import read_text, resolve_target
from sciontool_py.harness.hookjson import HookSet
from sciontool_py.harness.jsonedit import Document

DEFAULT_COMMAND = "sciontool"
EMPTIED = "; nothing else was in it, so the file is removed"


@dataclass(frozen=True)
class Scope:
    """Where to wire a harness (a project folder, or the user's own settings) and with what."""

    project: str | None  # the project folder; None means the user's settings
    command: str = DEFAULT_COMMAND  # what runs sciontool: a name on PATH or an absolute path
    force: bool = False

    def hook_command(self, dialect: str) -> str:
        """The hook as a shell command line (settings files)."""
        return f"{self.command} hook --dialect={dialect}"

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


def routed_events(dialect: str, fired: tuple[str, ...]) -> list[str]:
    """The events the harness fires that the dialect maps, read now: a newly mapped event follows."""
    from sciontool_py.dialect.discover import find_dialect

    mapped = find_dialect(dialect).mappings
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

    def install(self, scope: Scope) -> list[Edit]:
        raise NotImplementedError

    def uninstall(self, scope: Scope) -> list[Edit]:
        raise NotImplementedError

    def show(self, scope: Scope) -> str:
        raise NotImplementedError


class SettingsHarness(Harness):
    """A harness whose hooks live in a JSON settings file under `"hooks"`."""

    fired: tuple[str, ...] = ()  # every event the harness fires, in its lifecycle order
    project_file = ""  # relative to the project folder
    user_file = ""  # relative to the user's home
    grouped = True  # {"matcher", "hooks": [...]} entries rather than flat hooks
    notes: tuple[str, ...] = ()

    def entry(self, event: str, command: str) -> dict[str, object]:
        raise NotImplementedError

    def target(self, scope: Scope) -> tuple[str, str]:
        """(folder the file must stay inside, the file's path relative to it)."""
        if scope.project is None:
            return user_home(), self.user_file
        return scope.project, self.project_file

    def hook_set(self, scope: Scope) -> HookSet:
        command = scope.hook_command(self.dialect)
        events = routed_events(self.dialect, self.fired)
        return HookSet(command, {e: self.entry(e, command) for e in events}, self.grouped)

    def install(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        return [merge_hooks(path, self.hook_set(scope), list(self.notes))]

    def uninstall(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        return [unmerge_hooks(path, self.hook_set(scope))]

    def show(self, scope: Scope) -> str:
        root, relative = self.target(scope)
        hooks = self.hook_set(scope)
        body = json.dumps({"hooks": {e: [entry] for e, entry in hooks.entries.items()}}, indent=2)
        return f"# merged into {os.path.join(root, relative)}\n{body}\n"


def merge_hooks(path: str, hooks: HookSet, notes: list[str]) -> Edit:
    before = read_text(path)
    doc = Document(before if before is not None else "{}\n", path)
    added = hooks.add(doc)
    summary = f"added sciontool hooks for {', '.join(added)}" if added else "already wired"
    return Edit(path, before, doc.text if added else before, summary, notes)


def unmerge_hooks(path: str, hooks: HookSet) -> Edit:
    before = read_text(path)
    if before is None:
        return Edit(path, None, None, "no such file")
    doc = Document(before, path)
    removed = hooks.remove(doc)
    if not removed:
        return Edit(path, before, before, "no sciontool hooks")
    summary = f"removed sciontool hooks for {', '.join(removed)}"
    if doc.data == {}:  # a file that held only our hooks goes
        return Edit(path, before, None, summary + EMPTIED)
    return Edit(path, before, doc.text, summary)
