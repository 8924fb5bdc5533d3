"""What each install created, so uninstall removes that and nothing the user had.

A settings file cannot say which of its empty `"hooks": {}` or folders came
from sciontool: one JSON file in the user's state folder remembers it, per
file installed into (its resolved path): whether install created the file,
which folders, and which keys. Nothing of the file's content is kept (a
settings file may hold keys). A missing or unreadable record only makes
uninstall keep more: empty keys, the file, its folders.
"""

from __future__ import annotations

import json
import os

from sciontool_py.fs import write_file
from sciontool_py.harness.files import missing_dirs, remove_empty_dirs

FILE_NAME = "harness-installs.json"
_MAX_BYTES = 1 << 20


def state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "sciontool-py")


def _path() -> str:
    return os.path.join(state_dir(), FILE_NAME)


def _read() -> dict[str, object]:
    try:
        with open(_path(), "rb") as handle:
            data = json.loads(handle.read(_MAX_BYTES + 1)[:_MAX_BYTES])
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _load() -> dict[str, dict[str, object]]:
    installs = _read().get("installs")
    return installs if isinstance(installs, dict) else {}


def created(path: str) -> dict[str, object]:
    """What install created for this file: {"file": bool, "dirs": [...], "keys": [[...], ...]}."""
    entry = _load().get(path)
    return entry if isinstance(entry, dict) else {}


def keys(path: str) -> list[tuple[str, ...]]:
    found = created(path).get("keys")
    if not isinstance(found, list):
        return []
    return [tuple(k) for k in found if isinstance(k, list) and all(isinstance(s, str) for s in k)]


def remember(path: str, file: bool, dirs: list[str], new_keys: list[tuple[str, ...]]) -> None:
    """Add to what install created for path (a reinstall keeps what the first one created)."""
    data = _load()
    entry = data.get(path) if isinstance(data.get(path), dict) else None
    old = entry or {"file": file, "dirs": dirs, "keys": []}
    known = [list(k) for k in keys(path)] if entry else []
    for key in new_keys:
        if list(key) not in known:
            known.append(list(key))
    data[path] = {"file": bool(old.get("file")), "dirs": old.get("dirs") or [], "keys": known}
    _save(data)


def forget(path: str) -> None:
    data = _load()
    if data.pop(path, None) is None:
        return
    if data:
        _save(data)
        return
    made = _read().get("made")
    try:  # nothing left to remember: leave no trace, folders this record needed included
        os.unlink(_path())
    except OSError:
        return
    remove_empty_dirs([d for d in made if isinstance(d, str)] if isinstance(made, list) else [])


def _save(installs: dict[str, dict[str, object]]) -> None:
    made = _read().get("made") if os.path.exists(_path()) else missing_dirs(_path())
    os.makedirs(state_dir(), mode=0o700, exist_ok=True)
    text = json.dumps({"installs": installs, "made": made}, indent=1, sort_keys=True) + "\n"
    write_file(_path(), text, 0o600)
