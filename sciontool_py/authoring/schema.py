"""The JSON Schema of dialect.yaml, built from the loader's own vocabulary.

Editors (through the yaml-language-server modeline) complete and check a
dialect with it; it is generated so it can never drift from what the loader
accepts: a key added to the loader without a schema entry fails here.
"""

from __future__ import annotations

import json

from sciontool_py.dialect.options import USAGE_FORMS
from sciontool_py.dialect.spec import NAME_REGEX
from sciontool_py.dialect.validate import MAPPING_KEYS, OPTION_KINDS, TOP_LEVEL_KEYS
from sciontool_py.vocabulary import EVENTS, FIELD_KINDS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
# The modeline a dialect file carries to use the schema: dialects/dialect.schema.json, shipped
# in the package beside the dialects, so the shipped files point at ../dialect.schema.json.
MODELINE_PREFIX = "# yaml-language-server: $schema="

# What validate.path_segments accepts: no surrounding whitespace, an optional
# leading dot, then non-empty dot-separated keys.
PATH_PATTERN = r"^(?!\s)(?![\s\S]*\s$)\.?[^.]+(\.[^.]+)*$"

_KIND_TEXT = {
    "string": "a non-empty string at the path",
    "any": "any JSON value at the path (non-strings become compact JSON)",
    "number": "a positive number at the path",
    "boolean": "a boolean at the path",
}


def _non_empty_string(description: str) -> dict[str, object]:
    return {"type": "string", "minLength": 1, "description": description}


_OPTION_TEXT = {
    "assistant_blocks": "agent-end: the value at the assistant_text path is a Claude-style final message "
    "(a string, content blocks, or a string holding them).",
    "transcript_assistant_text": "agent-end: without assistant text, read it from the JSONL transcript "
    "at the envelope's transcript_path.",
    "input_tools": "Tool names whose tool-start means the agent waits for the user (waiting_for_input).",
    "resumes_after_wait": "Raw events (mapped ones) that mean the user answered: while the agent is "
    "waiting_for_input, their activity replaces it.",
    "call_id_fields": "Envelope paths holding the harness's tool call id; when set (even empty), open "
    "calls are tracked per session and the agent reads executing until every started call has ended.",
    "batch_end_events": "Raw events (mapped ones) that end every open tool call of their session.",
    "ended_sessions_stay_ended": "After session-end, a late event of that session (other than session-start) "
    "changes nothing; a session-start sets the phase running.",
    "keep_state_sources": "session-start sources (such as compact) that leave the status as it was.",
    "own_session_events": "Raw events (mapped ones) that count only for the session this agent's "
    "latest session-start named.",
    "interrupt_events": "Raw events (mapped ones) that end a turn the user interrupted (logged as such).",
    "no_reply_texts": "agent-end assistant texts that stand for no answer: a failed turn, no reply for "
    "the hub.",
    "model_call_events": "Raw events (mapped ones) after which the harness calls the model without a hook "
    "of its own: the agent reads thinking once no tool call is open.",
    "error_events": "Raw events (mapped ones) that report an error, not a question: the status is left "
    "as it was and the log line is an error.",
    "stamp_field": "Envelope path of the harness's event time (a number): a session-start stamped before "
    "an event of its session already applied (the harness fired them together) keeps the activity.",
    "resume_events": "Raw events (mapped ones) that take a session up again after its session-end, "
    "when the harness fires no session-start for it: the phase reads running again.",
    "thinking_from_model_start": "The harness announces each model request (a model-start event): a "
    "prompt-submit reads working until it comes, not thinking.",
    "watch_harness_exit": "The harness exits without firing a session end: inside Scion, the hook records "
    "the harness process and the exit watcher applies a session-end when it exits (outside Scion every "
    "agent is watched).",
    "stream_events": "Raw events (mapped ones) the harness fires once per streamed chunk of a model "
    "response: only the chunk with a value at stream_end_field ends the step; the others change nothing.",
    "stream_end_field": "Envelope path (numbers index arrays: .llm_response.candidates.0.finishReason) "
    "whose value marks the chunk that ends a streamed response (stream_events).",
    "queued_prompts": "A prompt-submit while a tool call of its session is open is one the harness "
    "queues: it changes nothing until the running turn lets it start.",
    "usage_transcript": "The form of the transcript (the envelope's transcript_path) where the harness "
    "records each model answer's token usage (" + ", ".join(USAGE_FORMS) + "). Outside Scion the hook "
    "reads it on at the end of each turn.",
    "usage_input_has_cache": "The harness counts cache reads and writes in its input tokens: the hook "
    "takes them out (Scion's contract: input excludes them).",
}


def _option(key: str, kind: type) -> dict[str, object]:
    if kind is bool:
        return {"type": "boolean", "description": _OPTION_TEXT[key]}
    if kind is str:
        return {"type": "string", "minLength": 1, "description": _OPTION_TEXT[key]}
    items = {"type": "string", "minLength": 1}
    return {"type": "array", "items": items, "description": _OPTION_TEXT[key]}


def build_schema() -> dict[str, object]:
    top: dict[str, dict[str, object]] = {
        "dialect": {
            "type": "string",
            "pattern": f"^{NAME_REGEX}$",
            "description": "The name --dialect selects.",
        },
        "event_name_field": _non_empty_string(
            "Legacy single envelope field holding the raw event name (ignored when event_name_fields is set)."
        ),
        "event_name_fields": {
            "type": "array",
            "minItems": 1,
            "items": _non_empty_string("An envelope field that may hold the raw event name."),
            "description": "Raw event name = the first non-empty string among these envelope fields.",
        },
        "mappings": {
            "type": ["object", "null"],  # empty (null) is allowed, as in Scion
            "additionalProperties": {"$ref": "#/$defs/mapping"},
            "description": "Raw event name, as the harness sends it -> canonical event.",
        },
        "responses": {
            "type": ["object", "null"],  # empty (null) is allowed, as in Scion
            "additionalProperties": {"type": "object"},
            "description": "Raw event name -> object printed as JSON on stdout for that event.",
        },
        "options": {
            "type": ["object", "null"],  # empty (null) is allowed, as in Scion
            "additionalProperties": False,
            "properties": {key: _option(key, kind) for key, kind in OPTION_KINDS.items()},
        },
    }
    mapping: dict[str, dict[str, object]] = {
        "event": {"enum": list(EVENTS), "description": "The canonical event."},
        "fields": {
            "type": ["object", "null"],  # empty (null) is allowed, as in Scion
            "additionalProperties": False,
            "properties": {
                field: {"$ref": "#/$defs/path", "description": f"{field}: {_KIND_TEXT[kind]}"}
                for field, kind in FIELD_KINDS.items()
            },
            "description": "Canonical data field -> dotted path into the envelope (.a.b.c).",
        },
    }
    return {
        "$schema": DRAFT,
        "title": "sciontool dialect.yaml",
        "description": "Maps a harness's raw hook events to Scion's canonical events.",
        "type": "object",
        "required": ["dialect"],
        "anyOf": [{"required": ["event_name_field"]}, {"required": ["event_name_fields"]}],
        "additionalProperties": False,
        "properties": {key: top[key] for key in TOP_LEVEL_KEYS},
        "$defs": {
            "mapping": {
                "type": "object",
                "required": ["event"],
                "additionalProperties": False,
                "properties": {key: mapping[key] for key in MAPPING_KEYS},
            },
            "path": {"type": "string", "pattern": PATH_PATTERN},
        },
    }


def schema_text() -> str:
    return json.dumps(build_schema(), indent=2) + "\n"
