"""The agent's state folder: where it is, how it is locked, how files change."""

from __future__ import annotations

import fcntl
import os

from sciontool_py import gojson

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from types import TracebackType

SCION_HOME = "/home/scion"  # Scion's fallback when HOME is unset


def home_dir() -> str:
    return os.environ.get("HOME") or SCION_HOME


class StateLock:
    """An exclusive lock on the home folder for one read-modify-write of state.

    Scion's Go handlers read, change and write agent-info.json and
    agent-limits.json without a cross-process lock, so two hooks at once can
    lose an update.  flock on the folder itself needs no extra file.  When
    the folder cannot be opened the lock is skipped: locking must never be
    the reason a hook fails.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.fd = -1

    def __enter__(self) -> StateLock:
        try:
            self.fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError:
            if self.fd >= 0:
                os.close(self.fd)
            self.fd = -1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing releases the flock
            self.fd = -1


def read_json_object(path: str) -> dict[str, object]:
    """The object in a JSON file; empty when missing, unreadable or not an object."""
    return read_json_file(path)[0]


def read_json_file(path: str) -> tuple[dict[str, object], str]:
    """read_json_object(), and why the file was not usable ('' when it was, or is missing)."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = gojson.loads(handle.read())
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        return {}, f"reading {path}: {exc.strerror or exc}"
    except ValueError as exc:  # JSONError, or bytes that are not UTF-8
        return {}, f"parsing {path}: {exc}"
    if not isinstance(value, dict):
        return {}, f"parsing {path}: not a JSON object"
    return value, ""


def failure(exc: OSError) -> str:
    """An OSError in one line: the file first, as Scion's messages put it."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    """Replace path with text so a reader sees the old or the new file, never a part."""
    folder, base = os.path.split(path)
    stem = base.rsplit(".", 1)[0]
    temp = os.path.join(folder, f".{stem}-{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        try:
            os.fchmod(fd, mode)
            os.write(fd, text.encode("utf-8", "surrogatepass"))
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.filename == temp:
            raise OSError(exc.errno, exc.strerror, path) from None  # name the file the user knows
        raise
