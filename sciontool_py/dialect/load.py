"""Load a dialect file, through a compiled cache so the hook skips YAML.

Importing PyYAML and validating costs more than the whole hook may; the
validated spec is stored as JSON under the user's cache folder, keyed by the
file's path, size, mtime, ctime and inode.  Any doubt about a cache entry
(stale, corrupt, unreadable, unwritable) falls back to the YAML file.
"""

from __future__ import annotations

import os

from sciontool_py import gojson
from sciontool_py.dialect.spec import FORMAT_VERSION, DialectSpec
from sciontool_py.errors import DialectError
from sciontool_py.handlers.files import write_atomic

_S_IFMT, _S_IFREG = 0o170000, 0o100000  # stat's constants, without importing it on the hook path


def cache_dir() -> str:
    explicit = os.environ.get("SCIONTOOL_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sciontool-py")


def _cache_path(path: str) -> str:
    # FNV-1a: stable across runs (unlike hash()) without importing zlib or hashlib.
    tag = 0xCBF29CE484222325
    for byte in path.encode("utf-8", "surrogateescape"):
        tag = ((tag ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(cache_dir(), f"dialect-{tag:016x}.json")


def _key(path: str, st: os.stat_result) -> str:
    # A string: the cache is read with Go's float64 numbers, which would blur nanoseconds.
    return f"{FORMAT_VERSION}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_ino}|{path}"


def _from_cache(path: str, key: str) -> DialectSpec | None:
    try:
        with open(_cache_path(path), encoding="utf-8") as handle:
            entry = gojson.loads(handle.read())
        if entry["key"] != key:  # type: ignore[index]
            return None
        return DialectSpec.from_json(entry["spec"])  # type: ignore[index]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _to_cache(path: str, key: str, spec: DialectSpec) -> None:
    target = _cache_path(path)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        write_atomic(target, gojson.dumps({"key": key, "spec": spec.to_json()}))
    except OSError:
        pass  # an unwritable cache only costs speed


def read_dialect_text(path: str) -> str:
    """The file's text, refused when absurdly large or not UTF-8."""
    from sciontool_py.dialect.validate import MAX_DIALECT_BYTES

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_DIALECT_BYTES + 1)
    except OSError as exc:
        raise DialectError(f"{path}: cannot read dialect: {exc.strerror or exc}") from None
    if len(data) > MAX_DIALECT_BYTES:
        raise DialectError(f"{path}: dialect file is larger than {MAX_DIALECT_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DialectError(f"{path}: dialect file is not UTF-8") from None


def compile_dialect(path: str) -> DialectSpec:
    """Parse and validate without the cache; DialectError names the first problem."""
    from sciontool_py.dialect.validate import check_text

    spec, problems = check_text(read_dialect_text(path), path)
    if spec is None:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise DialectError(f"{problems[0]}{more}")
    return spec


def load_dialect(path: str) -> DialectSpec:
    """A validated dialect from a dialect.yaml path, cached when possible."""
    path = os.path.abspath(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise DialectError(f"{path}: cannot read dialect: {exc.strerror or exc}") from None
    if st.st_mode & _S_IFMT != _S_IFREG:
        # A FIFO would hang the hook, a device would be read forever.
        raise DialectError(f"{path}: cannot read dialect: not a regular file")
    key = _key(path, st)
    spec = _from_cache(path, key)
    if spec is None:
        spec = compile_dialect(path)
        _to_cache(path, key, spec)
    return spec
