"""Codex CLI (0.171.0 tried): hooks.json beside config.toml, plus config.toml's `notify`.

The user layer is `$CODEX_HOME` (default `~/.codex`), the project layer
`<project>/.codex`. Codex runs hooks only once they are trusted (and a
project layer only in a trusted project); `codex exec
--dangerously-bypass-hook-trust` skips that for a scripted run. `notify` runs
one program with the end-of-turn JSON as its last argument, which `sciontool
hook` reads as the envelope.
"""

from __future__ import annotations

import os
import shlex
from typing import ClassVar

from sciontool_py.harness import tomledit
from sciontool_py.harness.base import (
    EMPTIED,
    Edit,
    Scope,
    SettingsHarness,
    routed_events,
    user_home,
)
from sciontool_py.harness.files import read_text, resolve_target

# Every hooks.json event Codex 0.171.0 fires, in the order of a session.
FIRED = (
    "SessionStart",
    "UserPromptSubmit",
    "PreModelRequest",
    "PostModelRequest",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
    "Interrupt",
    "Stop",
    "SessionEnd",
)
NOTIFY_EVENT = "agent-turn-complete"  # the type of the JSON notify passes
TIMEOUT_SECONDS = 30
# Codex 0.171.0 clamps these events' timeouts to 3 s and warns about it on every run.
SHORT_TIMEOUT_SECONDS = 3
SHORT_EVENTS = frozenset(("SessionEnd", "Interrupt"))
TRUST_NOTE = (
    "Codex runs these hooks only once trusted (review them in the codex TUI); a project's "
    ".codex/ layer loads only in a trusted project; `codex exec --dangerously-bypass-hook-trust` "
    "skips the review for a scripted run."
)


class Codex(SettingsHarness):
    name = "codex"
    dialect = "codex"
    fired = FIRED
    unwired: ClassVar[dict[str, str]] = {
        # 11 of a ten-tool session's 47 hooks, each waited for: the request follows the prompt or
        # a tool's end, which the dialect reads as thinking already (model_call_events).
        "PreModelRequest": "the prompt or a tool's end says the model is called",
        # As many again (11 of the 36 left), each waited for: the next hook (PreToolUse, Stop)
        # says the request's end, the rollout its usage (usage_transcript) and a failed turn's
        # error; Codex's own TUI shows a failure, and notify follows it there.
        "PostModelRequest": "the next hook says the request ended, the rollout its usage",
    }
    notes = (TRUST_NOTE,)

    def command(self, scope: Scope, event: str) -> str:
        # Codex runs each hook command with `/bin/bash -c` (whatever SHELL says; 0.171.0).
        return scope.bash_hook_command(self.dialect)

    def entry(self, event: str, command: str) -> dict[str, object]:
        timeout = SHORT_TIMEOUT_SECONDS if event in SHORT_EVENTS else TIMEOUT_SECONDS
        return {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}

    def target(self, scope: Scope) -> tuple[str, str]:
        return self.layer_file(scope, "hooks.json")

    def layer_file(self, scope: Scope, name: str) -> tuple[str, str]:
        """(the folder the file must stay inside, its path there) in the layer scope means."""
        if scope.project is not None:
            return scope.project, os.path.join(".codex", name)
        codex_home = os.environ.get("CODEX_HOME")
        if codex_home:
            return codex_home, name
        return user_home(), os.path.join(".codex", name)

    def notify_argv(self, scope: Scope) -> list[str] | None:
        """Codex's notify program, when the dialect maps what notify sends: through the shell
        relay where the shell hooks go through it (a turn's end then starts no Python beside a
        harness about to exit, while the helper runs)."""
        if not routed_events(self.dialect, (NOTIFY_EVENT,)):
            return None
        if scope.portable:  # Codex appends the turn's JSON: the line passes it on as "$@"
            return ["sh", "-c", scope.shell_line(f'hook --dialect={self.dialect} "$@"'), "sh"]
        return [*shlex.split(scope.relay), *scope.hook_argv(self.dialect)]

    def install(self, scope: Scope) -> list[Edit]:
        edits = [self.merge_hook_set(scope, [])]  # the notes go last, after config.toml's edit
        argv = self.notify_argv(scope)
        if argv is not None:
            path = resolve_target(*self.layer_file(scope, "config.toml"))
            before = read_text(path)
            after = tomledit.set_notify(before or "", argv, path, scope.force)
            if after == (before or ""):
                edits.append(Edit(path, before, before, "notify already set"))
            else:
                edits.append(Edit(path, before, after, "set notify to sciontool", installs=True))
        edits[-1].notes.extend(self.notes)
        return edits

    def uninstall(self, scope: Scope) -> list[Edit]:
        from sciontool_py.harness import record

        edits = super().uninstall(scope)
        path = resolve_target(*self.layer_file(scope, "config.toml"))
        before = read_text(path)
        if before is None:
            edits.append(Edit(path, None, None, "no such file"))
            return edits
        after = tomledit.unset_notify(before, scope.hook_argv(self.dialect), path)
        if after == before:
            edits.append(Edit(path, before, before, "no sciontool notify"))
        elif not after.strip() and record.created(path).get("file"):
            edits.append(Edit(path, before, None, "removed sciontool's notify" + EMPTIED, uninstalls=True))
        else:
            edits.append(Edit(path, before, after, "removed sciontool's notify", uninstalls=True))
        return edits

    def show(self, scope: Scope) -> str:
        text = super().show(scope)
        argv = self.notify_argv(scope)
        if argv is not None:
            config = os.path.join(*self.layer_file(scope, "config.toml"))
            text += f"# in {config}, among the top-level keys (before any [table])\n{tomledit.render(argv)}\n"
        return text + f"# {TRUST_NOTE}\n"
