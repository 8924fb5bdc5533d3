"""Reading and replacing a harness's settings files: inside their folder, atomically, with a backup."""

from __future__ import annotations

import difflib
import os

from sciontool_py.errors import SciontoolError
from sciontool_py.fs import write_file

BACKUP_SUFFIX = ".bak"


def resolve_target(root: str, relative: str) -> str:
    """root/relative with its symlinks resolved, refused if one of them leads out of root."""
    path = os.path.join(root, relative)
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise SciontoolError(f"{path} resolves to {real}, outside {root}: not following the symlink")
    return real


def read_text(path: str) -> str | None:
    """The file's text; None when it does not exist."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise SciontoolError(f"{path}: not UTF-8 text; left untouched") from None
    except OSError as exc:
        raise SciontoolError(f"{path}: {exc.strerror or exc}") from None


def replace(path: str, before: str | None, after: str | None) -> str | None:
    """Write after (None: delete) over before; returns the backup's path when there was a file."""
    backup = None
    try:
        if before is not None:
            mode = os.stat(path).st_mode & 0o777
            backup = path + BACKUP_SUFFIX
            write_file(backup, before, mode)
        else:
            mode = 0o644
            os.makedirs(os.path.dirname(path), exist_ok=True)
        if after is None:
            os.unlink(path)
        else:
            write_file(path, after, mode)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else f"{path}: "
        raise SciontoolError(f"{where}{exc.strerror or exc}") from None
    return backup


def unified_diff(path: str, before: str | None, after: str | None) -> str:
    old = (before or "").splitlines(keepends=True)
    new = (after or "").splitlines(keepends=True)
    old_name = "/dev/null" if before is None else path
    new_name = "/dev/null" if after is None else path
    return "".join(difflib.unified_diff(_ended(old), _ended(new), old_name, new_name))


def _ended(lines: list[str]) -> list[str]:
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n\\ No newline at end of file\n"]
    return lines
