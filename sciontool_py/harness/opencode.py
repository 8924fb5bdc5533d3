"""opencode (1.18.33 tried): no shell hooks, so a plugin file of ours bridges its events.

opencode loads every .js/.ts file in `.opencode/plugins/` (project) and
`~/.config/opencode/plugins/` (user, `$XDG_CONFIG_HOME` when set) at start.
The file is wholly ours: its first line marks it, so install updates it and
uninstall deletes it, and a file of the same name without the mark is refused.
"""

from __future__ import annotations

import json
import os

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Edit, Harness, Scope, user_home
from sciontool_py.harness.files import read_text, resolve_target

FILE_NAME = "sciontool-bridge.js"
MARK = "// sciontool-bridge:"


def bridge_source(scope: Scope, dialect: str) -> str:
    from sciontool_py.dialect.discover import find_dialect

    template = os.path.join(os.path.dirname(os.path.abspath(__file__)), "opencode_bridge.js")
    with open(template, encoding="utf-8") as handle:
        text = handle.read()
    command = scope.hook_argv(dialect)
    forward = list(find_dialect(dialect, write_cache=False).mappings)
    return text.replace("__COMMAND__", json.dumps(command)).replace("__FORWARD__", json.dumps(forward))


class Opencode(Harness):
    name = "opencode"
    dialect = "opencode"

    def target(self, scope: Scope) -> tuple[str, str]:
        if scope.project is not None:
            return scope.project, os.path.join(".opencode", "plugins", FILE_NAME)
        config = os.environ.get("XDG_CONFIG_HOME")
        if config:
            return config, os.path.join("opencode", "plugins", FILE_NAME)
        return user_home(), os.path.join(".config", "opencode", "plugins", FILE_NAME)

    def _existing(self, path: str) -> str | None:
        before = read_text(path)
        if before is not None and MARK not in before[:400]:
            raise SciontoolError(f"{path}: exists and is not sciontool's bridge; left untouched")
        return before

    def install(self, scope: Scope) -> list[Edit]:
        path = resolve_target(*self.target(scope))
        before = self._existing(path)
        after = bridge_source(scope, self.dialect)
        if before == after:
            return [Edit(path, before, before, "already wired")]
        verb = "updated" if before is not None else "wrote"
        return [Edit(path, before, after, f"{verb} the opencode bridge plugin", installs=True)]

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
