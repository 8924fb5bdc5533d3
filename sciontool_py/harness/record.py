"""What each install created, so uninstall removes that and nothing the user had.

A settings file cannot say which of its empty `"hooks": {}` or folders came
from sciontool: one JSON file in the user's state folder remembers it, per
file installed into (its resolved path): whether install created the file and
which keys; and, for every file alike, the folders install created (two
harnesses may share one, as core-agent and antigravity share `.agents/`).
Nothing of a file's content is kept (a settings file may hold keys).

The agent can write HOME, so the record is reached as the agent's state files
are (sciontool_py/fs.py): from HOME (or `$XDG_STATE_HOME`) without following a
symlink, a FIFO or folder in its place refused without blocking, reads capped.
A record that cannot be read or is not one refuses the command before anything
changes: it is the user's to move away (uninstall then only keeps more). One
command at a time reads, edits and records (`locked`), so concurrent installs
cannot lose each other's entries.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sciontool_py.errors import SciontoolError
from sciontool_py.fs import StateLock, ensure_folder, failure, read_bytes, remove, write_atomic
from sciontool_py.harness.files import remove_empty_dirs

FILE_NAME = "harness-installs.json"
# Long enough for a handful of installs queued behind one another on a loaded machine;
# a holder that never lets go (a stuck process) costs this much, then a one-line refusal.
LOCK_WAIT_SECONDS = 10.0
_ADVICE = "move it away to start afresh (uninstall then keeps what it cannot prove install made)"


def location() -> tuple[str, str]:
    """(the folder taken as given, the record's path below it, reached without following a link)."""
    state = os.environ.get("XDG_STATE_HOME")
    if state and os.path.isabs(state):  # a relative one is invalid (XDG): ignored
        return state, f"sciontool-py/{FILE_NAME}"
    return os.path.expanduser("~"), f".local/state/sciontool-py/{FILE_NAME}"


def _own_folders(root: str, rel: str) -> list[str]:
    """The folders below root holding the record, outermost first: what it may have created."""
    parts = rel.split("/")[:-1]
    return [os.path.join(root, *parts[: i + 1]) for i in range(len(parts))]


@dataclass
class Record:
    installs: dict[str, dict[str, object]] = field(default_factory=dict)  # path -> file, keys
    folders: list[str] = field(default_factory=list)  # folders install created, not removed yet
    made: list[str] = field(default_factory=list)  # the record's own folders it created

    def created(self, path: str) -> dict[str, object]:
        return self.installs.get(path, {})

    def keys(self, path: str) -> list[tuple[str, ...]]:
        found = self.created(path).get("keys")
        if not isinstance(found, list):
            return []
        return [tuple(k) for k in found if isinstance(k, list) and all(isinstance(s, str) for s in k)]

    def remember(self, path: str, file: bool, dirs: list[str], new_keys: list[tuple[str, ...]]) -> None:
        """Add to what install created for path (a reinstall keeps what the first one created)."""
        entry = self.installs.get(path)
        known = [list(k) for k in self.keys(path)]
        for key in new_keys:
            if list(key) not in known:
                known.append(list(key))
        made_file = bool(entry.get("file")) if entry is not None else file
        self.installs[path] = {"file": made_file, "keys": known}
        self.folders.extend(d for d in dirs if d not in self.folders)

    def forget(self, path: str, root: str) -> None:
        """Uninstall of path is done: drop its entry, and remove the folders install created on
        the way to it that are now empty, provided they lie inside root (the project or home it
        was installed into): a folder the record names anywhere else is never touched."""
        self.installs.pop(path, None)
        above = [d for d in self.folders if path.startswith(d + os.sep)]
        removed = remove_empty_dirs(os.path.realpath(root), sorted(above, key=len))
        self.folders = [d for d in self.folders if d not in removed]


def _refused(why: str) -> SciontoolError:
    return SciontoolError(f"{why}: the install record of sciontool harness; {_ADVICE}; nothing changed")


def load() -> Record:
    """The record as it is on disk (empty when there is none); SciontoolError when it cannot be
    read, is reached through a symlink, is not a regular file, is too large or is not a record."""
    root, rel = location()
    try:
        data = read_bytes(root, rel, private=True)
    except OSError as exc:
        raise _refused(failure(exc)) from None
    if data is None:
        return Record()
    path = os.path.join(root, rel)
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        raise _refused(f"{path}: not JSON") from None
    installs = value.get("installs") if isinstance(value, dict) else None
    if not isinstance(installs, dict):
        raise _refused(f"{path}: not an install record")
    entries = {p: e for p, e in installs.items() if isinstance(e, dict)}
    folders = value.get("folders")
    found = [d for d in folders if isinstance(d, str)] if isinstance(folders, list) else []
    for entry in entries.values():  # a record of the version before kept folders per file
        old = entry.pop("dirs", None)
        if isinstance(old, list):
            found.extend(d for d in old if isinstance(d, str) and d not in found)
    own = _own_folders(root, rel)
    made = value.get("made")
    return Record(entries, found, [d for d in made if d in own] if isinstance(made, list) else [])


def created(path: str) -> dict[str, object]:
    """What install created for this file: {"file": bool, "keys": [[...], ...]}."""
    return load().created(path)


def keys(path: str) -> list[tuple[str, ...]]:
    return load().keys(path)


def save(record: Record) -> None:
    """Write the record; with nothing left to remember, leave no trace, its own folders included."""
    root, rel = location()
    try:
        if not record.installs:
            remove(root, rel)
            remove_empty_dirs(root, record.made)
            return
        if not os.path.isdir(root):
            os.makedirs(root, 0o700)  # $XDG_STATE_HOME named but missing: the user's folder, kept
        if not os.path.lexists(os.path.join(root, rel)):
            record.made = []
            for folder in _own_folders(root, rel):
                if not os.path.lexists(folder):  # a symlink there is refused by ensure_folder's walk
                    ensure_folder(root, os.path.relpath(folder, root), 0o700)
                    record.made.append(folder)
        body = {"installs": record.installs, "folders": record.folders, "made": record.made}
        write_atomic(root, rel, json.dumps(body, indent=1, sort_keys=True) + "\n", 0o600)
    except OSError as exc:
        raise SciontoolError(f"{failure(exc)}: cannot keep the install record") from None


@contextmanager
def locked() -> Iterator[None]:
    """Hold the record's root folder (HOME) locked: one harness command at a time."""
    root, _ = location()
    with StateLock(root, LOCK_WAIT_SECONDS) as lock:
        if lock.given_up:
            raise SciontoolError(
                f"{root}: still locked by another process after {LOCK_WAIT_SECONDS:g}s "
                "(another sciontool harness command?); nothing changed"
            )
        yield
