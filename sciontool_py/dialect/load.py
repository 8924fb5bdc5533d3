"""Load a dialect file, through a compiled cache so the hook skips YAML.

Importing PyYAML and validating costs more than the whole hook may; the
validated spec, or the reason the file was refused, is stored as JSON under
the user's cache folder, keyed by the file's path, size, mtime, ctime and
inode, so a rejected file fails the next hook in milliseconds instead of
after the same validation again.  An entry is used only when it and its
folder belong to the current user and nobody else can write them (another
user's entry would decide the events and responses); any doubt about an
entry (stale, corrupt, unreadable, unwritable, untrusted) falls back to the
YAML file.
"""

from __future__ import annotations

import os

from sciontool_py import gojson
from sciontool_py.dialect.spec import FORMAT_VERSION, DialectSpec
from sciontool_py.errors import DialectError
from sciontool_py.fs import read_bytes, write_atomic

MAX_DIALECT_BYTES = 1 << 20  # real dialects are a few KiB; refuse anything absurd
_MAX_ENTRY_BYTES = 4 * MAX_DIALECT_BYTES  # the compiled form of the largest dialect, with room
_S_IFMT, _S_IFREG = 0o170000, 0o100000  # stat's constants, without importing it on the hook path


def cache_dir() -> str:
    explicit = os.environ.get("SCIONTOOL_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sciontool-py")


def _entry_name(path: str) -> str:
    # FNV-1a: stable across runs (unlike hash()) without importing zlib or hashlib.
    tag = 0xCBF29CE484222325
    for byte in path.encode("utf-8", "surrogateescape"):
        tag = ((tag ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"dialect-{tag:016x}.json"


def _key(path: str, st: os.stat_result) -> str:
    # A string: the cache is read with Go's float64 numbers, which would blur nanoseconds.
    return f"{FORMAT_VERSION}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_ino}|{path}"


def _from_cache(path: str, key: str) -> DialectSpec | DialectError | None:
    """The cached spec, or the cached refusal, for this version of the file; None on a miss."""
    try:
        data = read_bytes(cache_dir(), _entry_name(path), _MAX_ENTRY_BYTES, private=True)
        if data is None:
            return None
        entry = gojson.loads(data.decode("utf-8"))
        if entry["key"] != key:  # type: ignore[index]
            return None
        if "error" in entry:  # type: ignore[operator]
            return DialectError(entry["error"])  # type: ignore[index]
        return DialectSpec.from_json(entry["spec"])  # type: ignore[index]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _to_cache(path: str, entry: dict[str, object]) -> None:
    folder = cache_dir()
    try:
        # The cache folder and its parent at most: never HOME, nor a path that does not exist.
        for made in (os.path.dirname(folder), folder):
            try:
                os.mkdir(made, 0o700)
            except FileExistsError:
                pass
        st = os.stat(folder)
        if st.st_uid == os.geteuid() and not st.st_mode & 0o022:  # else it would never be read
            write_atomic(folder, _entry_name(path), gojson.dumps(entry), mode=0o600)
    except OSError:
        pass  # an unwritable or untrusted cache only costs speed


def _open_regular(path: str) -> int:
    """An fd on the dialect file: a FIFO must not hang the hook, a device must not be read forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise DialectError(f"{path}: cannot read dialect: {exc.strerror or exc}") from None
    if os.fstat(fd).st_mode & _S_IFMT != _S_IFREG:
        os.close(fd)
        raise DialectError(f"{path}: cannot read dialect: not a regular file")
    return fd


def _read_text(fd: int, path: str) -> str:
    chunks = []
    left = MAX_DIALECT_BYTES + 1
    try:
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise DialectError(f"{path}: cannot read dialect: {exc.strerror or exc}") from None
    if left <= 0:
        raise DialectError(f"{path}: dialect file is larger than {MAX_DIALECT_BYTES} bytes")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise DialectError(f"{path}: dialect file is not UTF-8") from None


def read_dialect_text(path: str) -> str:
    """The file's text, refused when not a regular file, absurdly large or not UTF-8."""
    fd = _open_regular(path)
    try:
        return _read_text(fd, path)
    finally:
        os.close(fd)


def _compile_text(text: str, path: str) -> DialectSpec:
    from sciontool_py.dialect.validate import check_text, summary

    spec, problems = check_text(text, path)
    if spec is None:
        raise DialectError(summary(problems))
    return spec


def compile_dialect(path: str) -> DialectSpec:
    """Parse and validate without the cache; DialectError names the first problem."""
    return _compile_text(read_dialect_text(path), path)


def load_dialect(path: str) -> DialectSpec:
    """A validated dialect from a dialect.yaml path, cached when possible."""
    path = os.path.abspath(path)
    fd = _open_regular(path)
    try:
        key = _key(path, os.fstat(fd))
        cached = _from_cache(path, key)
        if isinstance(cached, DialectError):
            raise cached
        if cached is not None:
            return cached
        text = _read_text(fd, path)  # read errors are not remembered: they may pass
    finally:
        os.close(fd)
    try:
        spec = _compile_text(text, path)
    except DialectError as exc:
        _to_cache(path, {"key": key, "error": str(exc)})
        raise
    _to_cache(path, {"key": key, "spec": spec.to_json()})
    return spec
