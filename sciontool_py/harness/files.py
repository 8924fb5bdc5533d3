"""Reading and replacing a harness's settings files: inside their folder, atomically, with a backup."""

from __future__ import annotations

import difflib
import errno
import os
import stat

from sciontool_py.errors import SciontoolError
from sciontool_py.fs import open_folder, read_capped, write_file

BACKUP_SUFFIX = ".bak"
# Real settings files are a few KiB; parsing, editing and checking one costs CPU in proportion
# (tomllib, libyaml and json read 256 KiB in 0.1 to 0.3 s of CPU, each of 2 or 3 parses).
MAX_SETTINGS_BYTES = 256 << 10


def resolve_target(root: str, relative: str) -> str:
    """root/relative with its symlinks resolved, refused if one of them leads out of root."""
    path = os.path.join(root, relative)
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise SciontoolError(f"{path} resolves to {real}, outside {root}: not following the symlink")
    return real


def read_text(path: str, limit: int = MAX_SETTINGS_BYTES) -> str | None:
    """The file's text; None when it does not exist. Only a regular file is read, opened
    without blocking: a FIFO in its place would hold install until killed. Reading stops past
    limit bytes: parsing and checking a file costs CPU in proportion to its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SciontoolError(f"{path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SciontoolError(f"{path}: not a regular file; left untouched")
        try:
            data = read_capped(fd, limit, path)
        except OSError as exc:
            if exc.errno != errno.EFBIG:
                raise
            raise SciontoolError(
                f"{path}: larger than {limit >> 10} KiB, more than a settings file holds: "
                "not edited (left untouched)"
            ) from None
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SciontoolError(f"{path}: not UTF-8 text; left untouched") from None
    except OSError as exc:
        raise SciontoolError(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def make_folders(folder: str) -> None:
    """folder and any missing parent, each 0755 (less under a stricter umask): under umask 000,
    os.makedirs would leave them 0777, open to another local user's hooks."""
    for made in missing_folders(folder):
        try:
            os.mkdir(made, 0o755)  # the umask can only take permissions away from this
        except FileExistsError:
            pass


def missing_dirs(path: str) -> list[str]:
    """The folders above path that do not exist yet, outermost first."""
    return missing_folders(os.path.dirname(path))


def missing_folders(folder: str) -> list[str]:
    """folder and those above it that do not exist yet, outermost first."""
    missing = []
    while folder and not os.path.lexists(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing[::-1]


def replace(path: str, before: str | None, after: str | None, backup: bool = False) -> str | None:
    """Write after (None: delete) over before, keeping the file's mode; with backup, the previous
    file is kept as FILE.bak first. Returns the backup's path, if one was written."""
    kept = None
    try:
        if before is not None:
            mode = os.stat(path).st_mode & 0o777
            if backup:
                kept = path + BACKUP_SUFFIX
                write_file(kept, before, mode)
        else:
            mode = 0o644
            make_folders(os.path.dirname(path))
        if after is None:
            os.unlink(path)
        else:
            write_file(path, after, mode)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else f"{path}: "
        raise SciontoolError(f"{where}{exc.strerror or exc}") from None
    return kept


def remove_empty_dirs(root: str, dirs: list[str]) -> list[str]:
    """Remove those of these folders (outermost first) that are empty, innermost first; returns
    those removed. Only a folder below root is removed, reached from root without following a
    symlink: a link planted on the way cannot send the removal out of it."""
    removed = []
    for folder in reversed(dirs):
        parent, leaf = os.path.split(os.path.relpath(folder, root))
        if leaf in (os.curdir, os.pardir) or parent.split(os.sep)[0] == os.pardir:
            continue  # root itself, or outside it
        try:
            fd = open_folder(root, parent) if parent else os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.rmdir(leaf, dir_fd=fd)
            finally:
                os.close(fd)
        except OSError:
            continue  # not empty, gone, or behind a link: it stays, and so do the folders holding it
        removed.append(folder)
    return removed


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
