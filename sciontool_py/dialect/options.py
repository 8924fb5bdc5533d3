"""A dialect's options as one typed record, built once the file is validated.

Validation (validate.py, OPTION_KINDS) already knows each option's type; the
hook, the exit watcher and the status rules read this record instead of
picking an untyped dict apart. `given` keeps what the file set, in its order:
the compiled form (compiled.json, the cache) stores that, and `dialect show`
prints it.
"""

from __future__ import annotations

# What each option turns on is documented in docs/dialects.md; the rules beyond Scion's are
# handlers/truth.py's.
_LISTS = (
    "input_tools",
    "resumes_after_wait",
    "batch_end_events",
    "keep_state_sources",
    "own_session_events",
    "interrupt_events",
    "no_reply_texts",
    "model_call_events",
    "error_events",
    "resume_events",
    "stream_events",
)
_FLAGS = (
    "assistant_blocks",
    "transcript_assistant_text",
    "ended_sessions_stay_ended",
    "thinking_from_model_start",
    "watch_harness_exit",
    "queued_prompts",
)
_TEXTS = ("stamp_field", "stream_end_field")
# The options of Scion's own rules; any other set one turns on the rules beyond them.
_SCION = frozenset(("input_tools", "resumes_after_wait", "assistant_blocks", "transcript_assistant_text"))


class DialectOptions:
    __slots__ = (*_LISTS, *_FLAGS, *_TEXTS, "call_id_fields", "given")

    input_tools: tuple[str, ...]
    resumes_after_wait: tuple[str, ...]
    batch_end_events: tuple[str, ...]
    keep_state_sources: tuple[str, ...]
    own_session_events: tuple[str, ...]
    interrupt_events: tuple[str, ...]
    no_reply_texts: tuple[str, ...]
    model_call_events: tuple[str, ...]
    error_events: tuple[str, ...]
    resume_events: tuple[str, ...]
    stream_events: tuple[str, ...]
    assistant_blocks: bool
    transcript_assistant_text: bool
    ended_sessions_stay_ended: bool
    thinking_from_model_start: bool
    watch_harness_exit: bool
    queued_prompts: bool
    stamp_field: str
    stream_end_field: str
    call_id_fields: tuple[str, ...] | None  # None: calls are not tracked; () tracks them by input

    def __init__(self, given: dict[str, object] | None = None) -> None:
        given = dict(given or {})
        self.given = given
        for name in _LISTS:
            setattr(self, name, _strings(given.get(name)))
        for name in _FLAGS:
            setattr(self, name, given.get(name) is True)
        for name in _TEXTS:
            value = given.get(name)
            setattr(self, name, value if isinstance(value, str) else "")
        ids = given.get("call_id_fields")
        self.call_id_fields = _strings(ids) if isinstance(ids, list) else None

    def __bool__(self) -> bool:
        return bool(self.given)

    @property
    def beyond_scion(self) -> bool:
        """Whether any option of the rules beyond Scion's is set (handlers/truth.py)."""
        return any(name not in _SCION for name in self.given)


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()
