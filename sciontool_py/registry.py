"""Where each agent on this machine keeps its state, outside Scion: one small file per agent.

Inside Scion there is one agent per container HOME, and its state is the
files Scion reads ($HOME/agent-info.json, and agent-sessions.json for the
rules beyond Scion's). Outside Scion several agents share one HOME: two
terminals, or a `claude -p` run from inside another agent's tool. Each is
then named by its harness process (pid and start time; process.py) and
keeps its own record in $HOME/.scion/agents/KEY.json: who it is (harness,
session, project, name, the `sciontool run` that started it, the agent it
runs inside), its agent-info.json content, its agent-sessions.json content
and what a person asks of it (since when, the last message, whether a turn
is under way, how it ended).

Records are read and written under the HOME's state lock, through the
hardened file layer (no symlink followed, single-link regular files, atomic
replace, mode 0600). Bounded: at most MAX_AGENTS records; an agent whose
harness is gone is listed for AGE_OUT seconds after its last change, then
removed; a record over MAX_BYTES or MAX_VALUES, damaged or planted reads as
missing, and at most MAX_LISTED names of the folder are looked at: what an
agent plants there costs a reader a bounded few milliseconds. A long-lived
reader (the exit watcher) keeps a Cache, and re-reads only a record that
changed.
"""

from __future__ import annotations

import os

from sciontool_py import gojson
from sciontool_py.errors import JSONError
from sciontool_py.fs import ensure_folder, open_folder, read_bytes, remove, write_atomic
from sciontool_py.fs import in_scion as in_scion  # where the callers have always found it

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

FOLDER = ".scion/agents"
MAX_AGENTS = 32
AGE_OUT = 3600.0  # seconds an ended agent stays listed after its last change
# A real record holds a few KiB: six texts of at most MAX_TEXT characters, its sessions' state
# (a few hundred values under sessions.py's caps), where its transcript was read to (256 ids).
MAX_BYTES = 96 << 10
MAX_VALUES = 4096  # commas, colons and openers outside strings: what a parse's cost follows
MAX_TEXT = 4096  # characters of a name, project folder or message kept
RUN_VARIABLE = "SCIONTOOL_RUN"  # `sciontool run`'s own process, "PID-START", for the hooks inside it
RUN_NAME_VARIABLE = "SCIONTOOL_RUN_NAME"


def progress(home: str) -> Callable[[], int]:
    """What changes as each hook outside Scion does its work: the records folder's modification
    time (every hook replaces its agent's record there). A state-lock waiter that sees it change
    knows the holders are at work, not stuck (fs.StateLock)."""
    folder = os.path.join(home, FOLDER)

    def mark() -> int:
        try:
            return os.stat(folder).st_mtime_ns
        except OSError:
            return 0

    return mark


def process_key(pid: int, start: int) -> str:
    return f"p{pid}-{start}"


def session_key(session: str) -> str:
    """The key of an agent found by its session id alone (no harness process to name it)."""
    import zlib  # only where /proc cannot name the harness

    data = session.encode("utf-8", "surrogatepass")
    return f"s{zlib.crc32(data):08x}{len(data):x}" if session else "s"


def process_of(key: str) -> list[int] | None:
    """[pid, start time] named by a process key; None for any other key."""
    if not key.startswith("p"):
        return None
    pid, _, start = key[1:].partition("-")
    return [int(pid), int(start)] if pid.isdigit() and start.isdigit() else None


class Record:
    """One agent. info and state are the agent's agent-info.json and agent-sessions.json contents."""

    __slots__ = (
        "key",
        "harness",
        "session",
        "project",
        "name",
        "run",
        "parent",
        "created",
        "since",
        "updated",
        "message",
        "turn",
        "guessed",
        "failed",
        "exit_code",
        "resumed",
        "info",
        "state",
        "tokens",
        "usage",
    )

    def __init__(self, key: str) -> None:
        self.key = key
        self.harness = ""  # the dialect's name
        self.session = ""  # the newest session id its events named
        self.project = ""  # the harness's working folder when first seen
        self.name = ""  # `sciontool run --name`
        self.run: list[int] | None = None  # the `sciontool run` process it runs under
        self.parent = ""  # the key of the agent it was started from, inside a tool
        self.created = 0.0
        self.since = 0.0  # when the activity or phase last changed
        self.updated = 0.0
        self.message = ""  # the last agent.log message
        self.turn = False  # a turn under way: a prompt taken and not yet answered
        self.guessed = False  # its crash was the exit watcher's guess (no exit code, no end hook)
        self.failed = False  # the turn's last model call failed: a late end of it is no clean exit
        self.exit_code: int | None = None
        self.resumed = ""  # how its session's previous process ended, when this one resumed it
        self.info: dict[str, object] = {}
        self.state: dict[str, object] = {}
        self.tokens: dict[str, object] = {}  # Scion's token types (and model calls) counted so far
        self.usage: dict[str, object] = {}  # where the transcript was read to (handlers/usage.py)

    @property
    def process(self) -> list[int] | None:
        return process_of(self.key)

    def to_value(self) -> dict[str, object]:
        value: dict[str, object] = {
            "harness": self.harness,
            "session": self.session,
            "project": self.project,
            "created": self.created,
            "since": self.since,
            "updated": self.updated,
            "message": self.message,
            "turn": self.turn,
            "info": self.info,
        }
        for key, item in (
            ("name", self.name),
            ("parent", self.parent),
            ("resumed", self.resumed),
            ("state", self.state),
            ("tokens", self.tokens),
            ("usage", self.usage),
        ):
            if item:
                value[key] = item
        if self.run is not None:
            value["run"] = self.run
        if self.guessed:
            value["guessed"] = True
        if self.failed:
            value["failed"] = True
        if self.exit_code is not None:
            value["exitCode"] = self.exit_code
        return value


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError
    return value[:MAX_TEXT]


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -_HUGE < value < _HUGE:
        raise ValueError  # NaN and the infinities fail the comparison too
    return float(value)


_HUGE = float(1 << 63)
_NUMBER = b"0123456789.-+"
_PLAIN = _NUMBER + b" \t\n\r,:[]{}"  # what holds no exponent, outside strings and literals
_RUNS = bytes(c if c in _NUMBER else 32 for c in range(256))  # each number a word of its own
MAX_DIGITS = 32  # a number's length: a time or a count has at most 20


def _decode(data: bytes) -> object:
    """A record's JSON, its cost bounded by MAX_VALUES whatever its shape (planted deep or dense).

    What write() leaves (times and counts: no exponent, no escaped character) is read by the C
    scanner with the builtin numbers, no Python call per value; anything else as Go reads it."""
    # Outside its strings (escaped backslashes and quotes taken out first): punctuation, numbers.
    outside = b"".join(data.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    if sum(map(outside.count, (b",", b":", b"[", b"{"))) > MAX_VALUES:
        raise ValueError
    text = gojson.decode_utf8(data)
    bare = outside.replace(b"true", b"").replace(b"false", b"").replace(b"null", b"")
    long = max(map(len, bare.translate(_RUNS).split()), default=0) > MAX_DIGITS
    if b"\\u" in data or bare.translate(None, _PLAIN) or long:
        return gojson.loads(text)  # past about 1,000 levels an error, never Go's slow deep decoder
    try:
        value, end = gojson.scan_plain(text, 0)
    except (StopIteration, ValueError, SystemError, RecursionError):
        raise ValueError from None
    if end != len(text):
        raise ValueError
    return value


def _parse(key: str, data: bytes) -> Record:
    value = _decode(data)
    if not isinstance(value, dict):
        raise ValueError
    record = Record(key)
    record.harness = _text(value.get("harness", ""))
    record.session = _text(value.get("session", ""))
    record.project = _text(value.get("project", ""))
    record.name = _text(value.get("name", ""))
    record.parent = _text(value.get("parent", ""))
    record.resumed = _text(value.get("resumed", ""))
    record.message = _text(value.get("message", ""))
    record.created = _number(value.get("created", 0))
    record.since = _number(value.get("since", 0))
    record.updated = _number(value.get("updated", 0))
    record.turn = value.get("turn") is True
    record.guessed = value.get("guessed") is True
    record.failed = value.get("failed") is True
    run = value.get("run")
    if run is not None:
        if not isinstance(run, list) or len(run) != 2:
            raise ValueError
        record.run = [int(_number(n)) for n in run]
    code = value.get("exitCode")
    if code is not None:
        record.exit_code = int(_number(code))
    info, state = value.get("info", {}), value.get("state", {})
    tokens, usage = value.get("tokens", {}), value.get("usage", {})
    if not all(isinstance(v, dict) for v in (info, state, tokens, usage)):
        raise ValueError
    record.info, record.state, record.tokens, record.usage = info, state, tokens, usage
    return record


def _valid_key(key: str) -> bool:
    return 0 < len(key) <= 64 and key.replace("-", "").isalnum() and key.isascii()


Identity = tuple[int, int, int, int]  # a file's device, inode, size and mtime in ns


class Cache:
    """The records a long-lived reader (the exit watcher) parsed, each with its file's identity
    then: a record whose file keeps it is not read again. Its records are shared: read only."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[Identity, Record | None]] = {}

    def read(self, home: str, key: str) -> Record | None:
        try:
            st = os.stat(os.path.join(home, FOLDER, f"{key}.json"), follow_symlinks=False)
        except OSError:
            self.seen.pop(key, None)
            return None
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        kept = self.seen.get(key)
        if kept is not None and kept[0] == identity:
            return kept[1]
        # Replaced between the stat and the read: kept under the older identity, read next time.
        record = read(home, key)
        self.seen[key] = (identity, record)
        return record

    def keep(self, keys: list[str]) -> None:
        """Forget the records no longer listed."""
        self.seen = {key: self.seen[key] for key in keys if key in self.seen}


def read(home: str, key: str) -> Record | None:
    """The record of KEY; None when it is missing or anything but what write() leaves."""
    try:
        data = read_bytes(home, f"{FOLDER}/{key}.json", MAX_BYTES)
        return None if data is None else _parse(key, data)
    except (OSError, ValueError, JSONError):
        return None


def write(home: str, record: Record) -> None:
    """Replace the record (its folder made when missing). Not fsynced: after a crash the worst is
    an agent listed as it was a moment before, and the status file itself is fsynced."""
    data = _fitting(record)
    try:
        write_atomic(home, f"{FOLDER}/{record.key}.json", data, mode=0o600, sync=False)
    except FileNotFoundError:  # the first record: its folders are made once, not on every hook
        ensure_folder(home, ".scion")
        ensure_folder(home, FOLDER)
        write_atomic(home, f"{FOLDER}/{record.key}.json", data, mode=0o600, sync=False)


def _fitting(record: Record) -> bytes:
    """RECORD's bytes, within what read() takes: its sessions' state can pass MAX_BYTES (eight
    sessions of 32 calls in flight with long ids and names), and is then left out (its calls in
    flight forgotten, as after a crash), then all of its status but activity and phase; a record
    read as missing would make the agent's next hook a new agent."""
    value = record.to_value()
    data = gojson.dumps(value).encode("utf-8", "surrogatepass")
    if len(data) > MAX_BYTES and "state" in value:
        del value["state"]
        data = gojson.dumps(value).encode("utf-8", "surrogatepass")
    if len(data) > MAX_BYTES:
        value["info"] = {k: v for k, v in record.info.items() if k in ("activity", "phase")}
        data = gojson.dumps(value).encode("utf-8", "surrogatepass")
    return data


# Names looked at in the folder, whatever else is there: the readers of every record (a hook
# adding an agent, `sciontool agents`, the exit watcher) stay a few milliseconds.
MAX_LISTED = MAX_AGENTS + 16


def keys(home: str) -> list[str]:
    """Every record's key (of the first MAX_LISTED names), in no order; [] without a registry."""
    try:
        fd = open_folder(home, FOLDER)
    except OSError:
        return []
    found = []
    try:
        with os.scandir(fd) as names:  # read a batch at a time: a huge folder is not listed whole
            for n, entry in enumerate(names):
                if n == MAX_LISTED:
                    break
                key = entry.name[:-5] if entry.name.endswith(".json") else ""
                if _valid_key(key):
                    found.append(key)
    except OSError:
        pass  # the folder went meanwhile: what was listed
    finally:
        os.close(fd)
    return found


def records(home: str, unreadable: list[str] | None = None, cache: Cache | None = None) -> list[Record]:
    """Every readable record, the most recently updated first; the keys of the others are added
    to UNREADABLE. With CACHE, a record whose file is unchanged is not read again."""
    found = []
    listed = keys(home)
    if cache is not None:
        cache.keep(listed)
    for key in listed:
        record = read(home, key) if cache is None else cache.read(home, key)
        if record is not None:
            found.append(record)
        elif unreadable is not None:
            unreadable.append(key)
    found.sort(key=lambda r: r.updated, reverse=True)
    return found


def ended(record: Record) -> bool:
    return record.info.get("phase") in ("stopped", "error")


def prune(home: str, now: float, keep: str = "") -> None:
    """Under the state lock: remove the records of agents that ended more than AGE_OUT seconds
    ago, and the oldest ended ones (then the oldest of all) past MAX_AGENTS; never KEEP."""
    damaged: list[str] = []  # named as ours, but not what write() leaves: planted or cut short
    found = [r for r in records(home, damaged) if r.key != keep]
    gone = [r for r in found if ended(r) and now - r.updated > AGE_OUT]
    kept = [r for r in found if r not in gone]
    room = MAX_AGENTS - 1 - len(kept)  # one place for KEEP
    if room < 0:
        by_age = sorted(kept, key=lambda r: (not ended(r), r.updated))
        gone += by_age[:-room]
    for key in [r.key for r in gone] + [k for k in damaged if k != keep]:
        try:
            remove(home, f"{FOLDER}/{key}.json")
        except OSError:
            pass  # a folder at the name: it reads as missing anyway
