"""The package's import graph: no circle, and no typer on the hook's modules."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sciontool_py"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking_only(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imported_anywhere(path: Path) -> set[str]:
    """Every module a source file imports, at any depth (function bodies too), typing-only ones
    aside; `from PACKAGE import MODULE` counts as PACKAGE.MODULE."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module != "__future__"
        ):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


def imports_of(path: Path) -> set[str]:
    """Package modules a module imports, at any depth, typing-only ones aside."""
    return imported_anywhere(path) & MODULES.keys()


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle as a path that returns to its start, or [] when there is none."""
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        for target in sorted(graph.get(node, ())):
            cycle = walk(target, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return []

    for start in sorted(graph):
        cycle = walk(start, [])
        if cycle:
            return cycle
    return []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_circle_inside_the_package() -> None:
    graph = {name: imports_of(path) - {name} for name, path in MODULES.items()}
    assert graph["sciontool_py.cli"] >= {"sciontool_py.fastpath"}  # the graph is really read
    assert find_cycle(graph) == []


def unit_of(name: str) -> str:
    """The top-level module or folder of the package a module belongs to."""
    return name.split(".")[1] if "." in name else "__init__"


def unit_graph() -> dict[str, set[str]]:
    """Imports between the package's top-level modules and folders."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        unit = unit_of(name)
        graph.setdefault(unit, set()).update(unit_of(t) for t in imports_of(path) if unit_of(t) != unit)
    return graph


def test_the_folders_stack_in_layers() -> None:
    # No circle between folders either: each imports only what sits below it, so the package
    # reads bottom up (errors, gojson, fs ... dialect, receiver ... fastpath, cli, main).
    graph = unit_graph()
    assert graph["receiver"] >= {"dialect", "telemetry"}  # the graph is really read
    assert find_cycle(graph) == []


# What runs a command: the CLI, its fast path, and the processes that run commands for it.
COMMANDS = {
    "__main__",
    "main",
    "cli",
    "fastpath",
    "helper",
    "run",
    "doctor",
}


def test_nothing_below_the_commands_imports_them() -> None:
    graph = unit_graph()
    below = {unit: targets & COMMANDS for unit, targets in graph.items() if unit not in COMMANDS}
    assert {unit: found for unit, found in below.items() if found} == {}


def test_the_fast_path_never_imports_the_typer_app() -> None:
    graph = {name: imports_of(path) for name, path in MODULES.items()}
    reachable, todo = set(), ["sciontool_py.fastpath"]
    while todo:
        name = todo.pop()
        if name not in reachable:
            reachable.add(name)
            todo += graph[name]
    assert "sciontool_py.cli" not in reachable


# The receiver runs an event through the handlers. Everything outside it (telemetry, dialect
# loading, harness install, authoring, the emitter, integrations, and the machinery in fs, log and
# hub) must not need handlers/, which holds only what one event does.
RECEIVER = "sciontool_py.receiver"


def _is_handler(name: str) -> bool:
    return name == f"{RECEIVER}.handlers" or name.startswith(f"{RECEIVER}.handlers.")


def handler_importers(graph: dict[str, set[str]]) -> set[str]:
    """Modules outside the receiver that import a handler."""
    outside = (n for n in graph if n != RECEIVER and not n.startswith(f"{RECEIVER}."))
    return {name for name in outside if any(_is_handler(target) for target in graph[name])}


def test_the_handler_rule_catches_an_importer() -> None:
    graph = {
        "sciontool_py.telemetry": {"sciontool_py.receiver.handlers.agent_log"},
        "sciontool_py.receiver.hook": {"sciontool_py.receiver.handlers.agent_log"},
    }
    assert handler_importers(graph) == {"sciontool_py.telemetry"}


def test_only_the_receiver_imports_the_handlers() -> None:
    graph = {name: imports_of(path) for name, path in MODULES.items()}
    assert (
        "sciontool_py.receiver.handlers.agent_info" in graph["sciontool_py.receiver.hook"]
    )  # the graph is really read
    assert handler_importers(graph) == set()


# Mutable module-level state that callers flip: a `global` statement, or a module-level list,
# dict or set that a function changes in place. Settings are objects passed in, knobs arguments.
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard"}
_CONTAINERS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def _mutable_globals(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        value = getattr(node, "value", None)
        mutable = isinstance(value, _CONTAINERS) or (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in ("dict", "list", "set")
        )
        if mutable:
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def flipped_state(source: str) -> set[str]:
    """Module-level names a function rebinds (`global`) or whose container it changes in place."""
    tree = ast.parse(source)
    containers = _mutable_globals(tree)
    found: set[str] = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        local |= {
            n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                found.update(node.names)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
                and isinstance(node.func.value, ast.Name)
            ):
                target = node.func.value.id
                if target in containers and target not in local:
                    found.add(target)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for t in targets:
                    name = (
                        t.value.id if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) else ""
                    )
                    if name in containers and name not in local:
                        found.add(name)
    return found


def test_the_state_rule_catches_a_flag_a_cache_and_a_registry() -> None:
    source = """
_quiet = False
_seen = {}
_names = []
LIMITS = {"a": 1}

def set_quiet(value):
    global _quiet
    _quiet = value

def remember(key, value):
    _seen[key] = value

def register(name):
    _names.append(name)

def fine(limits):
    found = {}
    found["x"] = LIMITS["a"]
    limits.update(found)
    return found
"""
    assert flipped_state(source) == {"_quiet", "_seen", "_names"}


# Known, each with its reason; anything new fails. Memos computed once and never flipped by a
# caller are tolerated.
KNOWN_STATE = {
    # memos: the JSON scanner, and the specs loaded, by their file's content (the helper)
    "sciontool_py.dialect.load": {"_scanner", "_LOADED"},
    "sciontool_py.gojson": {"_escape_pattern"},  # memo: a compiled pattern, off the hook's usual path
    "sciontool_py.gojson_bounded": {"_compiled"},  # memo: its patterns, for large documents only
    # the steps a relayed hook runs once it has answered: set and restored by AnswerFirst alone,
    # in the helper's one thread (tests/helper/test_relayed.py)
    "sciontool_py.deferred": {"_held"},
    # the processes start_detached started and has not yet collected (a caller that lives on
    # keeps no zombie): added and removed by launch alone (tests/telemetry/test_launch.py)
    "sciontool_py.telemetry.launch": {"_started"},
    # memo: the last agent-sessions.json the watcher read, by its file's identity (a cache the
    # helper's rescan reads once a second; replaced whole when the file changes)
    "sciontool_py.receiver.harness_exit": {"_SESSIONS"},
}


def test_no_module_keeps_state_that_callers_flip() -> None:
    flipped = {name: flipped_state(path.read_text()) for name, path in MODULES.items()}
    assert {name: found for name, found in flipped.items() if found} == KNOWN_STATE
