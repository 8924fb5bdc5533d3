"""The agent's state folder: where it is, how it is locked, how its files are read and replaced.

The agent (and the model driving it) can write anything under HOME, so every
state file is reached the way Scion's hardened logger reaches agent.log: each
folder below the one a path starts from is opened with O_NOFOLLOW (a symlink
anywhere on the way is refused, never followed), the file itself is opened
non-blocking (a FIFO cannot hang the hook) and used only when it is a regular
file with at most one link (a hard link to a file elsewhere is refused), and
reads stop at 1 MiB.  A file is never rewritten in place: a temp file with an
unpredictable name is created exclusively, written in full, fsynced and
renamed over it, so the old file stays whole until the new one is complete.
"""

from __future__ import annotations

# The C module: signal.py imports enum, which would cost every hook call 3 ms.
import _signal  # type: ignore[import-not-found]
import errno
import fcntl
import os
import time

from sciontool_py import gojson
from sciontool_py.errors import JSONError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

SCION_HOME = "/home/scion"  # Scion's fallback when HOME is unset
MAX_STATE_BYTES = 1 << 20  # Scion caps its session-state reads at 1 MiB
LOCK_WAIT_SECONDS = 2.0  # Scion's bound on waiting for its session-state lock
LOCK_BUSY_LIMIT_SECONDS = 20.0  # outside Scion, on a lock whose holders are at work (StateLock)
_LOCK_POLL_SECONDS = 0.01
SETTLE_WAIT_SECONDS = 0.5  # a reader's bound: a hook's record write after its answer takes ~1 ms
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_LOCK_FILE = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_S_IFMT, _S_IFREG, _S_IFLNK = 0o170000, 0o100000, 0o120000  # stat's, without importing it


def shared_tmp() -> str:
    """Where Scion's shared files outside HOME live: the fallback agent.log and the
    limits trigger Scion's init watches. /tmp unless SCIONTOOL_FALLBACK_DIR says otherwise
    (the test suite points it at its own folder, never at the machine's /tmp)."""
    return os.environ.get("SCIONTOOL_FALLBACK_DIR") or "/tmp"


def home_dir() -> str:
    return os.environ.get("HOME") or SCION_HOME


def in_scion(home: str) -> bool:
    """Inside a Scion container: one agent per HOME, whose state is Scion's own files."""
    return bool(os.environ.get("SCION_AGENT_ID")) or os.path.normpath(home) == SCION_HOME


def typed_mode(home: str) -> int:
    """The mode of the files holding what the user typed (agent.log, prompt.md): Scion's inside
    its one-user container, this user's alone outside it, where others may share the machine."""
    return 0o644 if in_scion(home) else 0o600


def failure(exc: OSError) -> str:
    """An OSError in one line: the file first, as Scion's messages put it."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def attempt(failures: list[str], write: Callable[..., None], *args: object) -> None:
    """Run WRITE(*ARGS); a file it could not write becomes a line in FAILURES, so one handler
    failing never stops the others (as in Scion's dispatcher)."""
    try:
        write(*args)
    except OSError as exc:
        failures.append(failure(exc))


def _named(exc: OSError, path: str) -> OSError:
    """exc about path as the user knows it, not the relative or temp name the call used."""
    if exc.errno == errno.ELOOP:
        return OSError(exc.errno, "a symbolic link on the path (never followed)", path)
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno or 0), path)


def _locate(root: str, rel: str) -> tuple[int, str]:
    """An fd on the folder holding root/rel, and the file's name in it.

    root itself is taken as given (HOME may legitimately be a symlink); every
    folder below it is opened with O_NOFOLLOW.
    """
    *folders, leaf = rel.split("/")
    fd = os.open(root, _FOLDER)
    for name in folders:
        try:
            child = os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
        except NotADirectoryError:
            # O_DIRECTORY with O_NOFOLLOW answers ENOTDIR for a symlink too: say which it was.
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            raise OSError(errno.ELOOP if mode & _S_IFMT == _S_IFLNK else errno.ENOTDIR, "", name) from None
        finally:
            os.close(fd)
        fd = child
    return fd, leaf


def _check_regular(fd: int, path: str) -> os.stat_result:
    st = os.fstat(fd)
    # nlink 0 is a file unlinked since it was opened: not a link to anything else.
    if st.st_mode & _S_IFMT != _S_IFREG or st.st_nlink > 1:
        raise OSError(errno.EINVAL, "not a single-link regular file (refused)", path)
    return st


def _tighten(fd: int, st: os.stat_result, mode: int) -> None:
    # Only to a private mode: inside Scion a file keeps whatever mode it has, as Scion leaves it.
    if not mode & 0o077 and st.st_mode & 0o077 and st.st_uid == os.geteuid():
        os.fchmod(fd, st.st_mode & mode & 0o777)


def _check_private(fd: int, path: str) -> None:
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise OSError(errno.EPERM, "owned by another user or writable by others (refused)", path)


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write less than asked (a full disk writes what fits, then fails).
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_bytes(root: str, rel: str, limit: int = MAX_STATE_BYTES, private: bool = False) -> bytes | None:
    """The bytes of root/rel; None when it, or a folder on the way, does not exist.

    OSError names the path when the file cannot be read, is reached through
    a symlink, is not a single-link regular file or holds more than limit
    bytes; with private, also when the file or its folder belongs to another
    user or others may write it.
    """
    path = os.path.join(root, rel)
    try:
        folder, leaf = _locate(root, rel)
        try:
            if private:
                _check_private(folder, os.path.dirname(path))
            fd = os.open(leaf, _READ, dir_fd=folder)
        finally:
            os.close(folder)
        try:
            _check_regular(fd, path)
            if private:
                _check_private(fd, path)
            return read_capped(fd, limit, path)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _named(exc, path) from None


def read_capped(fd: int, limit: int, path: str) -> bytes:
    """What fd holds, at most limit bytes: OSError(EFBIG) naming path past that, read no further."""
    chunks = []
    left = limit + 1
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
        chunks.append(chunk)
        left -= len(chunk)
    if left <= 0:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes (refused)", path)
    return b"".join(chunks)


def regular_size(root: str, rel: str, mode: int = 0o777) -> int | None:
    """The size of root/rel when it is a single-link regular file; None for anything else. With a
    private MODE, such a file of this user's is made private (append's rule)."""
    try:
        folder, leaf = _locate(root, rel)
        try:
            fd = os.open(leaf, _READ, dir_fd=folder)
        finally:
            os.close(folder)
        try:
            st = _check_regular(fd, leaf)
            _tighten(fd, st, mode)
            return st.st_size
        finally:
            os.close(fd)
    except OSError:
        return None


def read_json_file(root: str, rel: str) -> tuple[dict[str, object], str]:
    """The object in a JSON state file, and why the file was not usable ('' when it was, or is missing).

    Decoded as Go decodes it (a bad byte as U+FFFD, nesting up to Go's 10 000
    levels); anything that is not a JSON object comes back empty, with the reason.
    """
    try:
        data = read_bytes(root, rel)
        if data is None:
            return {}, ""
        value = gojson.loads(gojson.decode_utf8(data), go_depth=True)
    except OSError as exc:
        return {}, f"reading {failure(exc)}"
    except JSONError as exc:
        return {}, f"parsing {os.path.join(root, rel)}: {exc}"
    if not isinstance(value, dict):
        return {}, f"parsing {os.path.join(root, rel)}: not a JSON object"
    return value, ""


def write_atomic(root: str, rel: str, data: str | bytes, mode: int = 0o644, sync: bool = True) -> None:
    """Replace root/rel with data, so a reader sees the old file or the new one, never a part.

    On any failure (a full disk included) the old file is left byte for byte
    and the temp file is removed, on SIGTERM too; OSError names root/rel.
    Whatever sits at root/rel (a symlink, a FIFO, a hard link) is replaced,
    never followed or written through.  Without sync the data is not
    fsynced: for files a crash may lose (a telemetry spool), not state.
    """
    path = os.path.join(root, rel)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    try:
        folder, leaf = _locate(root, rel)
    except OSError as exc:
        raise _named(exc, path) from None
    # Unpredictable and exclusive: nothing can be planted at the name in advance.
    temp = f".{leaf}.{os.urandom(8).hex()}.tmp"
    trapped = _trap_sigterm()
    try:
        fd = os.open(temp, _CREATE, 0o600, dir_fd=folder)
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, leaf, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException as exc:
        try:
            os.unlink(temp, dir_fd=folder)
        except OSError:
            pass  # never created, or already renamed
        if isinstance(exc, _Terminated):
            _die_of_sigterm()
        if isinstance(exc, OSError):
            raise _named(exc, path) from None
        raise
    finally:
        os.close(folder)
        if trapped:
            try:
                _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
            except _Terminated:  # signal.signal runs a handler still pending: the file is complete
                _die_of_sigterm()


def ensure_folder(root: str, rel: str, mode: int = 0o700) -> None:
    """Create the folder root/rel (its parent must exist) unless something is there already.

    What is there is not checked here: a symlink at the name is refused by
    whichever call then goes through it.
    """
    try:
        folder, leaf = _locate(root, rel)
        try:
            os.mkdir(leaf, mode, dir_fd=folder)
        except FileExistsError:
            pass
        finally:
            os.close(folder)
    except OSError as exc:
        raise _named(exc, os.path.join(root, rel)) from None


def open_folder(root: str, rel: str) -> int:
    """A descriptor (close-on-exec) on the folder root/rel, reached without following a symlink."""
    try:
        fd, _ = _locate(root, rel + "/.")  # "." as the leaf: every named folder is walked
    except OSError as exc:
        raise _named(exc, os.path.join(root, rel)) from None
    return fd


def remove(root: str, rel: str) -> None:
    """Unlink root/rel (never through a symlink on the way); a missing file is not an error."""
    try:
        folder, leaf = _locate(root, rel)
        try:
            os.unlink(leaf, dir_fd=folder)
        finally:
            os.close(folder)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _named(exc, os.path.join(root, rel)) from None


def write_file(path: str, data: str | bytes, mode: int = 0o644) -> None:
    """write_atomic for a path whose folders are taken as given (a harness's settings, a fixture)."""
    folder, name = os.path.split(os.path.abspath(path))
    write_atomic(folder, name, data, mode)


def append(root: str, rel: str, data: bytes, mode: int = 0o644) -> None:
    """Append data to root/rel (created if missing) with one write() to an O_APPEND file.

    Lines of concurrent hooks never interleave. OSError names root/rel when it
    is reached through a symlink or is not a single-link regular file. Where MODE
    is private (0600), a file of this user's that others may read is made so
    first: one an older version left readable.
    """
    path = os.path.join(root, rel)
    try:
        folder, leaf = _locate(root, rel)
        try:
            fd = os.open(leaf, _APPEND, mode, dir_fd=folder)
        finally:
            os.close(folder)
        try:
            _tighten(fd, _check_regular(fd, path), mode)
            _write_all(fd, data)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _named(exc, path) from None


class _Terminated(BaseException):
    """SIGTERM arrived while a temp file existed."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated


def _trap_sigterm() -> bool:
    """Turn SIGTERM into _Terminated while a temp file exists, unless someone else handles it."""
    try:
        if _signal.getsignal(_signal.SIGTERM) != _signal.SIG_DFL:
            return False
        _signal.signal(_signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals cannot be handled here
        return False
    return True


def _die_of_sigterm() -> None:
    # The temp file is gone: now die of the signal, as if it had never been trapped.
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    os.kill(os.getpid(), _signal.SIGTERM)
    os._exit(128 + _signal.SIGTERM)  # only if the signal is blocked


class _Held:
    """A held flock on fd; closing the descriptor releases it."""

    fd = -1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing releases the flock
            self.fd = -1


class StateLock(_Held):
    """An exclusive lock on the state folder for one read-modify-write of state.

    Scion's Go handlers read, change and write agent-info.json and
    agent-limits.json without a cross-process lock, so two hooks at once can
    lose an update.  flock on the folder itself needs no extra file.  A
    holder never delays the hook more than `wait` seconds (polled every 10 ms,
    as FileLock is): after that the work is done without the lock, as Scion
    does it, and given_up says why (for the caller's WARN line).  Given
    PROGRESS (outside Scion: what changes as each holder does its work), the
    bound is `wait` seconds in which nothing changed, and
    LOCK_BUSY_LIMIT_SECONDS in all: a burst of hooks (100 at once, each in
    its turn) is waited for, a stuck holder is not.  When the
    folder cannot be opened the lock is skipped: locking must never be the
    reason a hook fails.
    """

    def __init__(
        self, folder: str, wait: float = LOCK_WAIT_SECONDS, progress: Callable[[], object] | None = None
    ) -> None:
        self.folder = folder
        self.wait = wait
        self.progress = progress
        self.fd = -1
        self.given_up = ""

    def __enter__(self) -> StateLock:
        return self.acquire()

    def acquire(self) -> StateLock:
        """Take the lock (or give up, as above); release() or the end of a `with` frees it."""
        try:
            self.fd = os.open(self.folder, _FOLDER)
        except OSError:
            return self
        try:
            if not _poll_for_lock(self.fd, self.wait, progress=self.progress):
                self.given_up = (
                    f"State lock on {self.folder} still held by another process after "
                    f"{self.wait:g}s; updating state without it"
                )
        except OSError:
            pass  # a file system without flock: work unlocked, as Scion always does
        return self


class FileLock(_Held):
    """An exclusive flock on the lock file root/rel (created 0600), as Scion locks its session state.

    Another holder is waited for at most `wait` seconds, polled every 10 ms
    (Scion's rule, so Scion's own processes and these agree); then, or when
    the file cannot be used (a symlink, a FIFO, a hard link), OSError.
    """

    def __init__(self, root: str, rel: str, wait: float = LOCK_WAIT_SECONDS) -> None:
        self.path = os.path.join(root, rel)
        self.root = root
        self.rel = rel
        self.wait = wait
        self.fd = -1

    def __enter__(self) -> FileLock:
        try:
            folder, leaf = _locate(self.root, self.rel)
            try:
                fd = os.open(leaf, _LOCK_FILE, 0o600, dir_fd=folder)
            finally:
                os.close(folder)
            try:
                _check_regular(fd, self.path)
                if not _poll_for_lock(fd, self.wait):
                    raise OSError(errno.ETIMEDOUT, f"still locked by another process after {self.wait:g}s")
            except BaseException:
                os.close(fd)
                raise
        except OSError as exc:
            raise _named(exc, self.path) from None
        self.fd = fd
        return self


def settled(folder: str, wait: float = SETTLE_WAIT_SECONDS) -> None:
    """Wait, at most `wait` seconds, until no hook holds folder's StateLock.

    A hook in its own process writes the agent's record under it, so a reader that
    waits here never reads one halfway through a hook.  The lock is taken shared
    and dropped at once: no hook waits on a reader.
    """
    try:
        fd = os.open(folder, _FOLDER)
    except OSError:
        return
    try:
        _poll_for_lock(fd, wait, fcntl.LOCK_SH)
    except OSError:
        pass  # no flock here: nothing to wait for
    finally:
        os.close(fd)


def _poll_for_lock(
    fd: int, seconds: float, mode: int = fcntl.LOCK_EX, progress: Callable[[], object] | None = None
) -> bool:
    """Whether the lock was had within SECONDS; with PROGRESS, SECONDS in which what it returns
    did not change (the holders are at work, not stuck), and LOCK_BUSY_LIMIT_SECONDS in all."""
    now = time.monotonic()
    deadline = now + seconds
    limit = now + LOCK_BUSY_LIMIT_SECONDS if progress is not None else deadline
    mark = progress() if progress is not None else None
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            now = time.monotonic()
            if progress is not None:
                seen = progress()
                if seen != mark:
                    mark, deadline = seen, now + seconds
            if now >= min(deadline, limit):
                return False
            time.sleep(_LOCK_POLL_SECONDS)
