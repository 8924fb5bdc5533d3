"""Load a dialect file through its compiled form, so the hook skips YAML.

Importing PyYAML and validating costs more than the whole hook may.  The
compiled form of a dialect (its validated spec as JSON, or the reason the
file was refused) is keyed on the file's content (a BLAKE2b digest of its
bytes), never on stat data, and it never decides more than the dialect file
would:

- the dialects shipped in this package use the compiled forms shipped beside
  them (`compiled.json`, written by `python -m sciontool_py.dialect.load`),
  never an entry in HOME, which the agent can write;
- any other dialect uses the user's cache folder only when the user (so the
  agent) could rewrite the dialect file itself; a file it cannot change is
  compiled on every call.

An entry is read back only through DialectSpec.from_json's checks, and any
doubt about it (stale, corrupt, unreadable, another user's) falls back to
the YAML file.  Entries keep the file's order of keys: `dialect show` and what
`harness install` generates are the same from a warm cache as from a cold one.
"""

from __future__ import annotations

import os

from sciontool_py.dialect.spec import FORMAT_VERSION, DialectSpec
from sciontool_py.errors import DialectError
from sciontool_py.fs import ensure_folder, open_folder, read_bytes, write_atomic

MAX_DIALECT_BYTES = 1 << 20  # real dialects are a few KiB; refuse anything absurd
_MAX_ENTRY_BYTES = 4 * MAX_DIALECT_BYTES  # the compiled form of the largest dialect, with room
_S_IFMT, _S_IFREG = 0o170000, 0o100000  # stat's constants, without importing it on the hook path
COMPILED_NAME = "compiled.json"  # beside each packaged dialect.yaml
_HOME_CACHE = ".cache/sciontool-py"


def packaged_dir() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    inside = os.path.join(os.path.dirname(here), "dialects")  # installed wheel
    if os.path.isdir(inside):
        return inside
    return os.path.join(os.path.dirname(os.path.dirname(here)), "dialects")  # source checkout


def cache_location() -> tuple[str, str]:
    """(a folder taken as given, the cache folder's path below it or ''): a folder the user named
    is used as named; the default one in HOME is reached without following a symlink, so a
    `~/.cache` the agent turned into a link out of HOME is neither read nor written."""
    explicit = os.environ.get("SCIONTOOL_CACHE_DIR")
    if explicit:
        return explicit, ""
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        return os.path.join(base, "sciontool-py"), ""
    return os.path.expanduser("~"), _HOME_CACHE


def cache_dir() -> str:
    root, rel = cache_location()
    return os.path.join(root, rel) if rel else root


def _entry_name(path: str) -> str:
    # FNV-1a of the path: one entry per file, stable across runs (unlike hash()).
    tag = 0xCBF29CE484222325
    for byte in path.encode("utf-8", "surrogateescape"):
        tag = ((tag ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"dialect-{tag:016x}.json"


def content_key(data: bytes) -> str:
    """What a compiled form is valid for: this format version and exactly these bytes."""
    try:
        from _blake2 import blake2b  # hashlib would load OpenSSL: 3 ms on the hook path
    except ImportError:  # pragma: no cover - CPython builds it in
        from hashlib import blake2b
    return f"{FORMAT_VERSION}|{blake2b(data, digest_size=32).hexdigest()}"


_scanner = None


def _decode_entry(data: bytes) -> object:
    """JSON as json.dumps wrote it, integers kept (gojson would make them floats), no json import."""
    global _scanner
    if _scanner is None:
        from _json import make_scanner

        class Context:
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = None

        _scanner = make_scanner(Context())  # type: ignore[arg-type]
    text = data.decode("utf-8")
    value, end = _scanner(text, 0)
    if end != len(text.rstrip()):
        raise ValueError("trailing data")
    return value


def encode_entry(entry: dict[str, object]) -> str:
    """An entry in the file's own key order (sorting keys changed what a warm cache gave)."""
    import json

    return json.dumps(entry, ensure_ascii=True, allow_nan=False, indent=1) + "\n"


def _read_entry(folder: str, name: str, key: str, private: bool) -> DialectSpec | DialectError | None:
    """The spec, or the refusal, an entry holds for this content; None on a miss or any doubt.
    name may go through folders below folder: they are walked without following a symlink."""
    try:
        data = read_bytes(folder, name, _MAX_ENTRY_BYTES, private=private)
        if data is None:
            return None
        entry = _decode_entry(data)
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        if "error" in entry:
            error = entry["error"]
            return DialectError(error) if isinstance(error, str) else None
        return DialectSpec.from_json(entry["spec"])
    except Exception:  # any doubt about an entry (the bare C scanner even raises SystemError)
        return None


def _to_cache(path: str, entry: dict[str, object]) -> None:
    root, rel = cache_location()
    try:
        # The cache folder and its parent at most: never HOME, nor a path that does not exist.
        if rel:
            ensure_folder(root, os.path.dirname(rel))
            ensure_folder(root, rel)
        else:
            for made in (os.path.dirname(root), root):
                try:
                    os.mkdir(made, 0o700)
                except FileExistsError:
                    pass
        fd = open_folder(root, rel) if rel else os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if st.st_uid == os.geteuid() and not st.st_mode & 0o022:  # else it would never be read
            write_atomic(root, _in_cache(rel, path), encode_entry(entry), mode=0o600)
    except (OSError, ValueError):
        pass  # an unwritable or untrusted cache only costs speed


def _in_cache(rel: str, path: str) -> str:
    """The entry's path below the cache location's root."""
    return f"{rel}/{_entry_name(path)}" if rel else _entry_name(path)


def _packaged(path: str) -> bool:
    root = os.path.realpath(packaged_dir())
    return os.path.realpath(path).startswith(root + os.sep)


def _rewritable(path: str) -> bool:
    """Whether this user could change what path holds: then an entry it plants decides nothing
    the file could not."""
    return os.access(path, os.W_OK) or os.access(os.path.dirname(path), os.W_OK)


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


def _read_data(fd: int, path: str) -> bytes:
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
    return b"".join(chunks)


def _text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DialectError(f"{path}: dialect file is not UTF-8") from None


def read_dialect_text(path: str) -> str:
    """The file's text, refused when not a regular file, absurdly large or not UTF-8."""
    fd = _open_regular(path)
    try:
        return _text(_read_data(fd, path), path)
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


def absolute(path: str) -> str:
    """path made absolute; DialectError when it is relative to a folder that was deleted."""
    try:
        return os.path.abspath(path)
    except FileNotFoundError:
        raise DialectError(f"{path}: a relative path, and the current folder no longer exists") from None


def load_dialect(path: str, write_cache: bool = True) -> DialectSpec:
    """A validated dialect from a dialect.yaml path, through its compiled form when one can be
    trusted; write_cache=False reads the cache but never writes it (harness install: no file
    but the harness's own is written)."""
    path = absolute(path)
    fd = _open_regular(path)
    try:
        data = _read_data(fd, path)  # read errors are never remembered: they may pass
    finally:
        os.close(fd)
    key = content_key(data)
    known = _LOADED.get(f"{key}|{path}")
    if known is not None:
        return _copy(known, path)
    if _packaged(path):
        found = _read_entry(os.path.dirname(os.path.realpath(path)), COMPILED_NAME, key, private=False)
        cache = False
    else:
        cache = _rewritable(path)
        key += "|" + path  # the refusal an entry holds names the file
        root, rel = cache_location()
        found = _read_entry(root, _in_cache(rel, path), key, private=True) if cache else None
    if isinstance(found, DialectError):
        raise found
    if found is not None:
        found.source = path
        return _remember(f"{key}|{path}", found)
    try:
        spec = _compile_text(_text(data, path), path)
    except DialectError as exc:
        if cache and write_cache:
            _to_cache(path, {"key": key, "error": str(exc)})
        raise
    if cache and write_cache:
        _to_cache(path, {"key": key, "spec": spec.to_json()})
    return _remember(f"{key}|{path}", spec)


# Specs loaded in this process, by their file's content and path: the helper runs hook
# after hook, and reading and decoding a compiled entry is a fifth of a relayed hook's work. A
# changed file has another key; a handful of dialects at most, so a small bound.
_LOADED: dict[str, DialectSpec] = {}
_LOADED_LIMIT = 16


def _remember(key: str, spec: DialectSpec) -> DialectSpec:
    if len(_LOADED) >= _LOADED_LIMIT:
        _LOADED.clear()
    _LOADED[key] = spec
    return _copy(spec, spec.source)


def _copy(spec: DialectSpec, source: str) -> DialectSpec:
    """A spec of its own for the caller (it may set source), sharing the read-only parts."""
    own = DialectSpec.__new__(DialectSpec)
    for slot in DialectSpec.__slots__:
        setattr(own, slot, getattr(spec, slot))
    own.source = source
    return own


def write_packaged_forms() -> list[str]:
    """Write compiled.json beside each packaged dialect.yaml; returns the paths written."""
    written = []
    root = packaged_dir()
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, "dialect.yaml")
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as file:
            data = file.read()
        spec = compile_dialect(path)
        spec.source = f"<packaged {name}>"
        target = os.path.join(root, name, COMPILED_NAME)
        with open(target, "w", encoding="ascii") as out:
            out.write(encode_entry({"key": content_key(data), "spec": spec.to_json()}))
        written.append(target)
    return written


if __name__ == "__main__":  # `python -m sciontool_py.dialect.load`: after editing a packaged dialect
    print("\n".join(write_packaged_forms()))
