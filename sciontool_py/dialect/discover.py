"""Which dialect.yaml a `--dialect NAME` means.

First match wins: each folder of $SCION_DIALECTS_PATH (NAME/dialect.yaml),
then $HOME/.scion/harness/dialect.yaml when it declares NAME (Scion's own
rule), then the dialects shipped in this package.
"""

from __future__ import annotations

import os

from sciontool_py.dialect.load import load_dialect, packaged_dir
from sciontool_py.dialect.spec import DialectSpec, valid_name
from sciontool_py.errors import DialectError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

DEFAULT_DIALECT = "claude"  # Scion's default when --dialect is not given


def harness_file() -> str:
    return os.path.join(os.path.expanduser("~"), ".scion", "harness", "dialect.yaml")


def _search_dirs() -> list[str]:
    dirs = [d for d in os.environ.get("SCION_DIALECTS_PATH", "").split(":") if d]
    return [*dirs, packaged_dir()]


def _inside(folder: str, name: str) -> str | None:
    """folder/name/dialect.yaml if it exists and does not escape folder."""
    candidate = os.path.join(folder, name, "dialect.yaml")
    if not os.path.isfile(candidate):
        return None
    root = os.path.realpath(folder)
    real = os.path.realpath(candidate)
    if os.path.commonpath([root, real]) != root:
        raise DialectError(f"{candidate}: resolves to {real}, outside the search folder {folder}")
    return candidate


def find_dialect(name: str, write_cache: bool = True) -> DialectSpec:
    if not valid_name(name):
        raise DialectError(f"invalid dialect name {name!r}: expected [a-z0-9][a-z0-9._-]*")
    search = _search_dirs()
    for folder in search[:-1]:
        found = _inside(folder, name)
        if found:
            return _checked(load_dialect(found, write_cache), name)
    harness = harness_file()
    if os.path.isfile(harness):
        spec = load_dialect(harness, write_cache)
        if spec.name == name:
            return spec
    found = _inside(search[-1], name)
    if found:
        return _checked(load_dialect(found, write_cache), name)
    known = ", ".join(sorted({n for n, _ in list_dialects()})) or "none"
    raise DialectError(f"unknown dialect {name!r}; available: {known}")


def _checked(spec: DialectSpec, name: str) -> DialectSpec:
    if spec.name != name:
        raise DialectError(f"{spec.source}: declares dialect {spec.name!r} but {name!r} was requested")
    return spec


def resolve(name: str | None, dialect_file: str | None) -> DialectSpec:
    """The dialect a command was asked for: an explicit file wins over a name."""
    if dialect_file:
        return load_dialect(dialect_file)
    return find_dialect(name or DEFAULT_DIALECT)


def list_dialects() -> list[tuple[str, str]]:
    """(name, path) of every usable dialect, in lookup order, first of a name only."""
    return [(name, path) for name, path, status in dialect_entries() if status == "ok"]


def dialect_entries() -> list[tuple[str, str, str]]:
    """(name, path, status) of every dialect file on the lookup path, in lookup order.

    status: `ok`; `invalid: <first error>`; `name mismatch: declares X` (a folder NAME whose
    file declares another dialect: --dialect=NAME refuses it); `shadowed by <path>` (an earlier
    entry of the same name wins).
    """
    entries: list[tuple[str, str, str]] = []
    first: dict[str, str] = {}

    def add(name: str, path: str, declared: str | None, problem: str | None) -> None:
        if problem is not None:
            status = f"invalid: {problem}"
        elif declared != name:
            status = f"name mismatch: declares {declared!r}"
        elif name in first:
            status = f"shadowed by {first[name]}"
        else:
            first[name] = path
            status = "ok"
        entries.append((name, path, status))

    search = _search_dirs()
    for folder in search[:-1]:
        _collect(folder, add)
    harness = harness_file()
    if os.path.isfile(harness):
        declared, problem = _declared(harness)
        add(declared or "?", harness, declared, problem)
    _collect(search[-1], add)
    return entries


def _declared(path: str) -> tuple[str | None, str | None]:
    """The name a dialect file declares, or the problem that makes it unusable."""
    try:
        return load_dialect(path).name, None
    except DialectError as exc:
        return None, str(exc).removeprefix(f"{os.path.abspath(path)}:").strip()  # keeps line:col


def _collect(folder: str, add: Callable[[str, str, str | None, str | None], None]) -> None:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        if not valid_name(name):
            continue
        try:
            path = _inside(folder, name)
        except DialectError as exc:
            add(name, os.path.join(folder, name, "dialect.yaml"), None, str(exc))
            continue
        if path:
            add(name, path, *_declared(path))
