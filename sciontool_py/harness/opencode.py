"""opencode (1.18.33 tried): no shell hooks, so a plugin file of ours bridges its events.

opencode loads every .js/.ts file in `.opencode/plugins/` (project) and
`~/.config/opencode/plugins/` (user, `$XDG_CONFIG_HOME` when set) at start.
The file is wholly ours: its first line marks it, so install updates it and
uninstall deletes it, and a file of the same name without the mark is refused.

At every start opencode installs `@opencode-ai/plugin` with npm into each config
folder that lacks it (the user's, and a project's `.opencode/`), and once a plugin
is to be loaded it waits for those installs: install says what that costs.
"""

from __future__ import annotations

import json
import os

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Edit, Harness, Scope, user_home
from sciontool_py.harness.files import read_text, resolve_target

FILE_NAME = "sciontool-bridge.js"
MARK = "// sciontool-bridge:"
# Record key: (WRITTEN, the SHA-256 of a bridge install wrote). The file is wholly ours, so a
# reinstall replaces it and uninstall deletes it: only while it holds what install wrote.
WRITTEN = "#written"
PACKAGE = os.path.join("node_modules", "@opencode-ai", "plugin", "package.json")
PROJECT_NOTE = (
    "opencode installs @opencode-ai/plugin (about 64 MB, from the npm registry) into {folder} at its "
    "first start here, and with a plugin there it waits for that (about 75 s at every start where the "
    "registry cannot be reached); --user wires the user's plugin folder instead, which costs nothing "
    "once opencode has installed the package there."
)
USER_NOTE = (
    "{folder} has no @opencode-ai/plugin yet, which opencode installs there at a start, hooked or not "
    "(about 64 MB, from the npm registry): with a plugin to load, its start waits for that install "
    "(about 75 s at every start where the registry cannot be reached)."
)


def bridge_source(scope: Scope, dialect: str) -> str:
    from sciontool_py.dialect.discover import find_dialect

    template = os.path.join(os.path.dirname(os.path.abspath(__file__)), "opencode_bridge.js")
    with open(template, encoding="utf-8") as handle:
        text = handle.read()
    command = scope.hook_argv(dialect)
    forward = list(find_dialect(dialect, write_cache=False).mappings)
    return text.replace("__COMMAND__", json.dumps(command)).replace("__FORWARD__", json.dumps(forward))


def user_config() -> tuple[str, str]:
    """opencode's config folder, as (a root it stays inside, the folder relative to it)."""
    config = os.environ.get("XDG_CONFIG_HOME")
    if config:
        return config, "opencode"
    return user_home(), os.path.join(".config", "opencode")


class Opencode(Harness):
    name = "opencode"
    dialect = "opencode"

    def target(self, scope: Scope) -> tuple[str, str]:
        if scope.project is not None:
            return scope.project, os.path.join(".opencode", "plugins", FILE_NAME)
        root, config = user_config()
        return root, os.path.join(config, "plugins", FILE_NAME)

    def notes(self, scope: Scope) -> list[str]:
        """What opencode's next start waits for: its installs of @opencode-ai/plugin not made yet."""
        folders = []
        if scope.project is not None:
            folders.append((os.path.join(scope.project, ".opencode"), PROJECT_NOTE))
        try:
            folders.append((os.path.join(*user_config()), USER_NOTE))
        except SciontoolError:
            pass  # no HOME: opencode cannot start either
        return [note.format(folder=f) for f, note in folders if not os.path.isfile(os.path.join(f, PACKAGE))]

    def _existing(self, path: str) -> str | None:
        from sciontool_py.harness import record

        before = read_text(path)
        if before is None:
            return None
        if MARK not in before[:400]:
            raise SciontoolError(f"{path}: exists and is not sciontool's bridge; left untouched")
        written = [key[1] for key in record.keys(path) if key[:1] == (WRITTEN,)]
        if written and _digest(before) not in written:  # an install before this one kept no digest
            raise SciontoolError(
                f"{path}: changed since sciontool wrote it, and replacing or deleting it would lose "
                "those changes; move them to a plugin file of your own (or delete this one), then "
                "run again; left untouched"
            )
        return before

    def install(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = self._existing(path)
        after = bridge_source(scope, self.dialect)
        notes = self.notes(scope)
        if before == after:
            return [Edit(path, before, before, "already wired", notes)]
        verb = "updated" if before is not None else "wrote"
        summary = f"{verb} the opencode bridge plugin"
        written: list[tuple[str, ...]] = [(WRITTEN, _digest(after))]
        return [Edit(path, before, after, summary, notes, installs=True, created_keys=written)]

    def uninstall(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = self._existing(path)
        if before is None:
            return [Edit(path, None, None, "no such file")]
        return [Edit(path, before, None, "removed the opencode bridge plugin", uninstalls=True)]

    def show(self, scope: Scope) -> str:
        path = os.path.join(*self.target(scope))
        return f"// save as {path} (opencode loads every plugin in that folder at start)\n" + bridge_source(
            scope, self.dialect
        )


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()
