"""Token usage from what the harness records, in Scion's contract, a little further each hook.

Most harnesses' hooks carry no usage (Claude Code, Copilot CLI, Qwen Code), or carry it only on
the per-chunk AfterModel that install no longer wires (Gemini CLI); each writes every model
answer's usage to the transcript the envelope names (`transcript_path`, Copilot's
`transcriptPath`). At the end of a turn (and of a session) the hook reads that file on from where
the last hook of the agent stopped, at most MAX_READ bytes a call (a long backlog is caught up
over the next calls), and adds what it finds to the event, so the session metrics, telemetry,
the hub and `sciontool agents` count it. FORMS says, per harness, which lines hold a call's
usage, the id that a call's repeated lines share (counted once), and the names of its counts.
Codex's rollout holds running totals (`token_count`): what a line adds is its rise over the last.
A harness whose hooks say each call's usage (Codex's PostModelRequest, opencode's step-finish)
is counted from them, and its transcript is then not read (it would count them twice).

One contract (Scion's usage deriver): input excludes cache reads and writes; cache reads, cache
writes and reasoning apart. A harness that counts cache reads in its input (OpenAI's and
Gemini's usage) has them taken out. Only outside Scion (Scion derives usage from the harness's
own telemetry); only a regular file, never waited on (O_NONBLOCK), never followed through a
final symlink.
"""

from __future__ import annotations

import os

from sciontool_py import gojson
from sciontool_py.errors import JSONError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from sciontool_py.dialect.options import DialectOptions
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.receiver.handlers.sessions import SessionState
    from sciontool_py.registry import Record

    Holder = Record | SessionState  # what keeps an agent's tokens and where its transcript was read to

MAX_READ = 4 << 20  # bytes of transcript read in one hook call
MAX_IDS = 256  # call ids remembered: the lines of one call come close together
_READ_AT = frozenset(("agent-end", "subagent-end", "session-end", "response-complete"))
_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_S_IFMT, _S_IFREG = 0o170000, 0o100000
# Scion's token types, and the event's field for each.
FIELDS = (
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache_read", "cached_tokens"),
    ("cache_write", "cache_write_tokens"),
    ("reasoning", "reasoning_tokens"),
)
CALLS_FIELD = "api_calls"  # in the event's data, in this process only: the model calls found


class Form:
    """How one harness's transcript records a model call's usage."""

    __slots__ = ("path_field", "marker", "kind", "key", "usage", "names", "input_has_cache")

    def __init__(
        self,
        marker: bytes,
        kind: tuple[tuple[str, ...], str],
        key: tuple[str, ...],
        usage: tuple[str, ...],
        names: dict[str, str],
        input_has_cache: bool,
        path_field: str = "transcript_path",
    ) -> None:
        self.path_field = path_field  # the envelope's field naming the transcript
        self.marker = marker  # in every line with usage: the other lines are not parsed
        self.kind = kind  # (where, what): the line's kind
        self.key = key  # where the call's id is; () for running totals (Codex)
        self.usage = usage  # where its counts are
        self.names = names  # Scion's token type -> the harness's count
        self.input_has_cache = input_has_cache


FORMS = {
    # Each assistant line (one per content block) repeats its message's id and usage.
    "claude": Form(
        b'"usage"',
        (("type",), "assistant"),
        ("message", "id"),
        ("message", "usage"),
        {
            "input": "input_tokens",
            "output": "output_tokens",
            "cache_read": "cache_read_input_tokens",
            "cache_write": "cache_creation_input_tokens",
        },
        input_has_cache=False,
    ),
    # A message is written again as it grows, with its id.
    "gemini": Form(
        b'"tokens"',
        (("type",), "gemini"),
        ("id",),
        ("tokens",),
        {"input": "input", "output": "output", "cache_read": "cached", "reasoning": "thoughts"},
        input_has_cache=True,
    ),
    "qwen": Form(
        b'"usageMetadata"',
        (("type",), "assistant"),
        ("uuid",),
        ("usageMetadata",),
        {
            "input": "promptTokenCount",
            "output": "candidatesTokenCount",
            "cache_read": "cachedContentTokenCount",
            "reasoning": "thoughtsTokenCount",
        },
        input_has_cache=True,
    ),
    "copilot": Form(
        b'"session.usage_record"',
        (("type",), "session.usage_record"),
        ("id",),
        ("data", "usage"),
        {
            "input": "inputTokens",
            "output": "outputTokens",
            "cache_read": "cacheReadTokens",
            "cache_write": "cacheWriteTokens",
            "reasoning": "reasoningTokens",
        },
        input_has_cache=True,  # seen: 1000 input tokens of which 400 cached
        path_field="transcriptPath",
    ),
    "codex": Form(
        b'"token_count"',
        (("payload", "type"), "token_count"),
        (),
        ("payload", "info", "total_token_usage"),
        {
            "input": "input_tokens",
            "output": "output_tokens",
            "cache_read": "cached_input_tokens",
            "cache_write": "cache_write_input_tokens",
            "reasoning": "reasoning_output_tokens",
        },
        input_has_cache=True,
    ),
}


def wanted(env: Mapping[str, str]) -> bool:
    """Whether the hook counts usage: as the telemetry exports it (SCION_USAGE_SOURCE=hooks, or
    unset outside Scion, where no deriver of Scion's counts the harness's own telemetry)."""
    from sciontool_py.telemetry.settings import usage_from_hooks

    return usage_from_hooks(env)


def count(holder: Holder | None, event: CanonicalEvent, options: DialectOptions) -> None:
    """Under the state lock: the event's usage in Scion's contract, counted into the agent
    (HOLDER: its record, or inside a Scion HOME its agent-sessions.json state, which only a
    dialect with a transcript needs; None: the event's counts alone); at the end of a turn, what
    the transcript added (unless the hooks say usage themselves)."""
    if options.usage_input_has_cache:
        contract(event)
    if holder is None:
        return
    add_reported(holder, event)
    form = FORMS.get(options.usage_transcript)
    if form is not None and not holder.usage.get("reported"):
        take(holder, event, form)


def contract(event: CanonicalEvent) -> None:
    """The event's input count without cache reads and writes (for a harness that counts them in)."""
    data = event.data
    cached = _count(data.get("cached_tokens")) + _count(data.get("cache_write_tokens"))
    if cached and "input_tokens" in data:
        data["input_tokens"] = max(0, _count(data["input_tokens"]) - cached)


def take(holder: Holder, event: CanonicalEvent, form: Form) -> None:
    """Read the transcript on and add its new usage to EVENT and HOLDER."""
    path = event.raw.get(form.path_field)
    if event.name not in _READ_AT or not isinstance(path, str) or not path:
        return
    state: dict[str, object] = holder.usage if holder.usage.get("path") == path else {"path": path[:4096]}
    offset = _count(state.get("offset"))
    lines, offset, skipping = _read_on(path, offset, state.get("skip") is True)
    found = {name: 0 for name, _ in FIELDS}
    calls = 0
    for line in lines:
        usage = _usage(line, form, state)
        if usage is not None:
            calls += 1
            for name, value in usage.items():
                found[name] += value
    state["offset"], state["skip"] = offset, skipping
    holder.usage = state
    if not calls:
        return
    for name, field in FIELDS:
        if found[name]:
            event.data[field] = _count(event.data.get(field)) + found[name]
            holder.tokens[name] = _count(holder.tokens.get(name)) + found[name]
    holder.tokens["calls"] = _count(holder.tokens.get("calls")) + calls
    event.data[CALLS_FIELD] = calls


def add_reported(holder: Holder, event: CanonicalEvent) -> None:
    """A model-end that carries its own usage (Codex's, opencode's): counted into the agent."""
    if event.name != "model-end":
        return
    counted = False
    for name, field in FIELDS:
        value = _count(event.data.get(field))
        if value:
            holder.tokens[name] = _count(holder.tokens.get(name)) + value
            counted = True
    if counted:
        holder.tokens["calls"] = _count(holder.tokens.get("calls")) + 1
        holder.usage["reported"] = True  # the hooks say usage: the transcript would count it twice


def _usage(line: bytes, form: Form, state: dict[str, object]) -> dict[str, int] | None:
    """One transcript line's new usage in Scion's contract (None when it has none, or its call was
    counted); STATE keeps the ids counted (or Codex's last totals)."""
    if form.marker not in line:
        return None  # most lines: no parse
    try:
        entry = gojson.loads(gojson.decode_utf8(line))
    except JSONError:
        return None
    where, kind = form.kind
    usage = _at(entry, form.usage)
    if _at(entry, where) != kind or not isinstance(usage, dict):
        return None
    counts = {name: _count(usage.get(source)) for name, source in form.names.items()}
    if form.key:
        key = _at(entry, form.key)
        ids = state.get("ids")
        seen = [s for s in ids if isinstance(s, str)] if isinstance(ids, list) else []
        if not isinstance(key, str) or not key or key in seen:
            return None
        state["ids"] = [*seen[-MAX_IDS + 1 :], key]
    else:  # running totals: this call's counts are their rise over the last seen
        last = state.get("totals")
        totals = last if isinstance(last, dict) else {}
        state["totals"] = counts
        counts = {name: max(0, value - _count(totals.get(name))) for name, value in counts.items()}
        if not any(counts.values()):
            return None
    if form.input_has_cache:
        counts["input"] = max(0, counts["input"] - counts["cache_read"] - counts.get("cache_write", 0))
    return counts


def _at(value: object, where: tuple[str, ...]) -> object:
    for name in where:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


def _read_on(path: str, offset: int, skipping: bool) -> tuple[list[bytes], int, bool]:
    """The whole lines after OFFSET (at most MAX_READ bytes), the offset after them, and whether
    a line longer than that is being skipped; nothing from anything but a regular file."""
    try:
        fd = os.open(path, _OPEN)
    except OSError:
        return [], offset, skipping
    try:
        st = os.fstat(fd)
        if st.st_mode & _S_IFMT != _S_IFREG:
            return [], offset, skipping
        if st.st_size < offset:  # rewritten from the start (a new file at the name)
            offset, skipping = 0, False
        os.lseek(fd, offset, os.SEEK_SET)
        data = os.read(fd, MAX_READ)
    except OSError:
        return [], offset, skipping
    finally:
        os.close(fd)
    end = data.rfind(b"\n")
    if end < 0:  # no whole line: a line longer than a read is skipped, counted as nothing
        return ([], offset + len(data), True) if len(data) == MAX_READ else ([], offset, skipping)
    lines = data[: end + 1].split(b"\n")[:-1]
    if skipping:  # the rest of the long line, up to its end
        lines = lines[1:]
    return lines, offset + end + 1, False


def _count(value: object) -> int:
    """A whole, non-negative count below 2^53 (JSON numbers decode as floats); anything else is 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1 << 53:
        return 0  # NaN and the infinities fail the comparison too
    return int(value)
