"""`sciontool dialect scaffold`: a starter dialect and fixtures from a recorded envelope log.

The log is what a `cat >> events.jsonl` hook captured: JSON objects one after
another (a harness that sends no trailing newline leaves them on one line, so
they are read as a stream, not line by line).
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import cast

from sciontool_py import gojson
from sciontool_py.authoring.schema import MODELINE_PREFIX, schema_text
from sciontool_py.dialect.normalize import normalize
from sciontool_py.dialect.spec import DialectSpec, Mapping, valid_name
from sciontool_py.dialect.validate import check_text, path_segments
from sciontool_py.errors import JSONError, SciontoolError
from sciontool_py.vocabulary import EVENTS

# Envelope fields harnesses put the event name in, most specific first.
NAME_FIELD_CANDIDATES = (
    "hook_event_name",
    "event",
    "type",
    "event_name",
    "eventName",
    "hook_event",
    "event_type",
    "eventType",
    "kind",
    "name",
    "action",
)
# Where harnesses put each data field, as normalized dotted key paths (see
# _key): one key matches at the top level only (a nested "message" is too
# often an error's), longer paths match at any depth.
_TOKEN_NAMES = {
    "input_tokens": "inputtokens prompttokens",
    "output_tokens": "outputtokens completiontokens",
    "cached_tokens": "cachedtokens cachereadinputtokens",
    "cache_write_tokens": "cachewritetokens cachecreationinputtokens",
    "reasoning_tokens": "reasoningtokens",
}
_ALIASES = {
    "prompt": "prompt userprompt",
    "tool_name": "toolname tool.name function.name",
    "message": "message notification.message",
    "reason": "reason",
    "source": "source",
    "session_id": "sessionid session.id threadid conversationid",
    "tool_input": "toolinput tool.input tool.args tool.arguments function.arguments",
    "tool_output": "tooloutput toolresponse toolresult tool.output tool.result",
    **{f: f"{names} {' '.join('usage.' + n for n in names.split())}" for f, names in _TOKEN_NAMES.items()},
    "assistant_text": "assistanttext lastassistantmessage",
    "success": "success ok",
    "error": "error error.message",
}
FIELD_ALIASES = {f: tuple(tuple(a.split(".")) for a in aliases.split()) for f, aliases in _ALIASES.items()}
_MAX_DEPTH = 4
_PLAIN = re.compile(r"[A-Za-z0-9.][A-Za-z0-9._/-]*\Z")


class Scaffold:
    """What scaffold writes: file path -> text."""

    def __init__(self, files: dict[str, str], mapped: int, todo: int) -> None:
        self.files = files
        self.mapped = mapped
        self.todo = todo


def _key(text: str) -> str:
    """Case- and separator-insensitive form of a name: PreToolUse == pre_tool_use."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def read_log(path: str) -> list[tuple[int, dict[str, object]]]:
    """(line, envelope) for each JSON object in the log (`-`: stdin)."""
    where = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.buffer.read().decode("utf-8")
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SciontoolError(f"{where}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    decoder = json.JSONDecoder()
    out: list[tuple[int, dict[str, object]]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos == len(text):
            break
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError as exc:
            raise SciontoolError(f"{where}:{line}: not JSON: {exc}") from None
        except RecursionError:
            raise SciontoolError(f"{where}:{line}: not JSON: nested too deeply") from None
        if not isinstance(value, dict):
            raise SciontoolError(f"{where}:{line}: an envelope must be a JSON object")
        out.append((line, value))
    if not out:
        raise SciontoolError(f"{where}: no envelopes in the log")
    return out


def name_fields(path: str, envelopes: list[tuple[int, dict[str, object]]]) -> list[str]:
    """The fewest candidate fields that give every envelope a name, most common first."""
    chosen: list[str] = []
    left = envelopes
    while left:
        counts = {f: sum(_is_name(env.get(f)) for _, env in left) for f in NAME_FIELD_CANDIDATES}
        best = max(NAME_FIELD_CANDIDATES, key=lambda f: counts[f])  # first of equals wins
        if not counts[best]:
            tried = ", ".join(NAME_FIELD_CANDIDATES)
            raise SciontoolError(f"{path}:{left[0][0]}: no event name in the envelope (tried {tried})")
        chosen.append(best)
        left = [(line, env) for line, env in left if not _is_name(env.get(best))]
    return chosen


def _is_name(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def known_events() -> dict[str, dict[str, list[str]]]:
    """Normalized raw name -> canonical event -> where it comes from."""
    from sciontool_py.dialect.load import compile_dialect, packaged_dir

    known: dict[str, dict[str, list[str]]] = {}
    for event in EVENTS:
        known.setdefault(_key(event), {}).setdefault(event, []).append("the canonical event name")
    folder = packaged_dir()
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "dialect.yaml")
        if os.path.isfile(path):
            spec = compile_dialect(path)
            for raw, mapping in spec.mappings.items():
                known.setdefault(_key(raw), {}).setdefault(mapping.event, []).append(f"{spec.name}'s {raw}")
    return known


def _paths(value: object, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """Every (key path, value) in nested objects, shallow first."""
    if not isinstance(value, dict) or len(prefix) >= _MAX_DEPTH:
        return []
    out: list[tuple[tuple[str, ...], object]] = []
    for key, item in value.items():
        out.append(((*prefix, key), item))
    for key, item in value.items():
        out += _paths(item, (*prefix, key))
    return out


def _matches(path: tuple[str, ...], alias: tuple[str, ...]) -> bool:
    keys = tuple(_key(k) for k in path)
    if len(alias) == 1:
        return keys == alias
    return keys[-len(alias) :] == alias


def _candidates(field: str, envelopes: list[dict[str, object]]) -> list[tuple[str, ...]]:
    """Paths that may hold field, most envelopes first, then shortest."""
    seen: dict[tuple[str, ...], int] = {}
    for env in envelopes:
        for path, _ in _paths(env):
            if path_segments(".".join(path)) == path and any(_matches(path, a) for a in FIELD_ALIASES[field]):
                seen[path] = seen.get(path, 0) + 1
    return sorted(seen, key=lambda p: (-seen[p], len(p)))


# Structure, beyond key names: an object holding a name string beside an arguments value is a
# tool call (its name, input and output), wherever the harness nests it.
_CALL_NAME_KEYS = ("name", "tool", "toolname", "function", "functionname")
_CALL_INPUT_KEYS = ("args", "arguments", "input", "params", "parameters")
_CALL_OUTPUT_KEYS = ("result", "output", "response", "returnvalue")
_SESSION_WORDS = ("session", "thread", "conversation", "chat")


def structural_candidates(envelopes: list[dict[str, object]]) -> dict[str, list[tuple[str, ...]]]:
    """Field paths suggested by the envelopes' shape rather than by a known key name."""
    found: dict[str, list[tuple[str, ...]]] = {}

    def add(field: str, path: tuple[str, ...]) -> None:
        if path_segments(".".join(path)) == path and path not in found.setdefault(field, []):
            found[field].append(path)

    for env in envelopes:
        for path, value in [((), env), *_paths(env)]:
            if not isinstance(value, dict):
                continue
            keys = {_key(k): k for k in value}
            name = next(
                (keys[k] for k in _CALL_NAME_KEYS if isinstance(value.get(keys.get(k, "")), str)), None
            )
            args = next((keys[k] for k in _CALL_INPUT_KEYS if k in keys), None)
            if name is None or args is None:
                continue
            add("tool_name", (*path, name))
            add("tool_input", (*path, args))
            output = next((keys[k] for k in _CALL_OUTPUT_KEYS if k in keys), None)
            if output is not None:
                add("tool_output", (*path, output))
    for key in envelopes[0] if envelopes else ():
        values = {env.get(key) for env in envelopes if isinstance(env.get(key), str)}
        if len(values) == 1 and all(key in env for env in envelopes) and _looks_like_session(key):
            add("session_id", (key,))
    return found


def _looks_like_session(key: str) -> bool:
    return any(word in _key(key) for word in _SESSION_WORDS)


def detect_fields(
    name_fields: tuple[str, ...],
    raw: str,
    event: str,
    envelopes: list[dict[str, object]],
    session_envelopes: list[dict[str, object]] | None = None,
) -> dict[str, tuple[str, ...]]:
    """Field paths that change this raw event's normalization, so the defaults miss them.

    session_envelopes: the whole log, for what only holds across events (a session id that
    never changes); this event's envelopes when not given.
    """
    structural = structural_candidates(envelopes)
    structural.update(
        {k: v for k, v in structural_candidates(session_envelopes or envelopes).items() if k == "session_id"}
    )
    fields: dict[str, tuple[str, ...]] = {}
    for field in FIELD_ALIASES:
        candidates = structural.get(field, []) + _candidates(field, envelopes)
        # What the defaults give for this field: the same for every candidate, so read once.
        before = _data(name_fields, raw, event, fields, envelopes, field) if candidates else []
        for path in candidates:
            after = _data(name_fields, raw, event, {**fields, field: path}, envelopes, field)
            if before != after and any(v is not None for v in after):
                fields[field] = path
                break
    return fields


def _data(
    name_fields: tuple[str, ...],
    raw: str,
    event: str,
    fields: dict[str, tuple[str, ...]],
    envelopes: list[dict[str, object]],
    field: str,
) -> list[object]:
    spec = DialectSpec("scaffold", name_fields, {raw: Mapping(event, fields)}, {}, {}, "<scaffold>")
    return [normalize(spec, env).data.get(field) for env in envelopes]


# Words in a raw event name -> the canonical event they most likely mean, first match wins.
_SUBJECTS = {
    "tool": {"tool", "call", "function", "command", "exec", "shell"},
    "model": {"model", "llm", "generation", "completion", "inference"},
    "session": {"session"},
    "turn": {"turn", "agent", "run"},
    "prompt": {"prompt", "user"},
}
_STARTS = {"start", "started", "begin", "before", "pre", "request", "invoke", "invoked", "created"}
_ENDS = {"end", "ended", "finish", "finished", "done", "after", "post", "complete", "completed", "result"}
_ENDS_AND_REPLIES = _ENDS | {"response", "reply", "usage", "stop", "stopped", "closed", "deleted"}
_WORD_RULES = (
    ("tool", _STARTS, "tool-start"),
    ("tool", _ENDS_AND_REPLIES, "tool-end"),
    ("model", _STARTS, "model-start"),
    ("model", _ENDS_AND_REPLIES, "model-end"),
    ("session", _STARTS, "session-start"),
    ("session", _ENDS_AND_REPLIES, "session-end"),
    ("prompt", {"submit", "submitted", "sent", "prompt"}, "prompt-submit"),
    ("turn", _STARTS, "agent-start"),
    ("turn", _ENDS_AND_REPLIES, "agent-end"),
)


def event_from_words(raw: str) -> str | None:
    """tool-start for ToolCallStarted or tool.call.begin: a guess from the name's words."""
    words = set(
        re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", raw).lower().replace("_", " ").replace(".", " ").split()
    )
    words = {w for word in words for w in word.split("-")}
    if words & {"notification", "notify", "permission", "approval"}:
        return "notification"
    for subject, actions, event in _WORD_RULES:
        if words & _SUBJECTS[subject] and words & actions:
            return event
    return None


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def slug(raw: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", raw)
    return re.sub(r"[^a-z0-9]+", "-", spaced.lower()).strip("-") or "event"


def _scalar(text: str) -> str:
    """text as a YAML scalar that reads back as the same string."""
    import yaml

    if _PLAIN.match(text) and yaml.safe_load(text) == text:
        return text
    return _json_text(text)  # a JSON string is a YAML double-quoted scalar


def scaffold(name: str, log_path: str, out_dir: str) -> Scaffold:
    if not valid_name(name):
        raise SciontoolError(f"invalid dialect name {name!r}: expected [a-z0-9][a-z0-9._-]*")
    recorded = read_log(log_path)
    where = "<stdin>" if log_path == "-" else log_path
    fields_for_name = tuple(name_fields(where, recorded))
    # Decode as Go would for normalization; the fixtures keep the envelope as recorded.
    by_raw: dict[str, list[tuple[dict[str, object], dict[str, object]]]] = {}
    for line, env in recorded:
        raw = next(v for f in fields_for_name if _is_name(v := env.get(f)))
        try:
            decoded = cast("dict[str, object]", gojson.loads(json.dumps(env)))  # an object, as env is
        except JSONError as exc:
            raise SciontoolError(f"{where}:{line}: {exc}") from None
        except RecursionError:
            raise SciontoolError(f"{where}:{line}: invalid JSON: nested too deeply") from None
        by_raw.setdefault(str(raw), []).append((env, decoded))
    known = known_events()
    lines = [
        f"{MODELINE_PREFIX}dialect.schema.json",
        f"# Scaffolded by `sciontool dialect scaffold` from {os.path.basename(where)}: "
        f"{_plural(len(recorded), 'envelope')}, {_plural(len(by_raw), 'raw event')}.",
        "# Check each guessed mapping, resolve each TODO, then run",
        "# `sciontool dialect check` and `sciontool dialect test` on this folder.",
        f"dialect: {name}",
        f"event_name_fields: [{', '.join(_scalar(f) for f in fields_for_name)}]",
    ]
    body: list[str] = []
    mapped = todo = 0
    for raw, pairs in by_raw.items():
        guesses = known.get(_key(raw), {})
        event = next(iter(guesses)) if len(guesses) == 1 else None
        from_words = event is None and not guesses and (event := event_from_words(raw)) is not None
        everything = [d for many in by_raw.values() for _, d in many]
        fields = detect_fields(fields_for_name, raw, event or raw, [d for _, d in pairs], everything)
        seen = f"seen {_plural(len(pairs), 'time')}"
        if event is not None:
            mapped += 1
            source = (
                "guessed from the words of its name: check it"
                if from_words
                else (f"as {_sources(guesses[event])}")
            )
            body.append(f"  # {raw} ({seen}): {source}")
            body += _mapping_lines(raw, event, fields, "  ")
            continue
        todo += 1
        if guesses:
            options = "; ".join(f"{e} ({_sources(w)})" for e, w in guesses.items())
            body.append(f"  # TODO: {raw} ({seen}) is mapped differently by other dialects: {options}.")
        else:
            body.append(f"  # TODO: {raw} ({seen}) matches no known harness event. Map it to one of")
            body += [f"  #   {', '.join(EVENTS[i : i + 8])}," for i in range(0, len(EVENTS), 8)]
            body.append(f"  #   or leave it out: unmapped, it passes through as event {raw!r}.")
        body += _mapping_lines(raw, "TODO", fields, "  # ")
    lines.append("mappings:" if mapped else "mappings: {}")
    lines += body
    text = "\n".join(lines) + "\n"
    dialect_file = os.path.join(out_dir, name, "dialect.yaml")
    spec, problems = check_text(text, dialect_file)
    if spec is None:  # a bug here, not in the log: say which rule the output broke
        raise SciontoolError(f"generated dialect is invalid: {problems[0]}")
    files = {dialect_file: text, os.path.join(out_dir, name, "dialect.schema.json"): schema_text()}
    used: set[str] = set()
    for raw, pairs in by_raw.items():
        env, decoded = max(pairs, key=lambda p: len(_paths(p[1])))  # the richest; first of equals
        base = stem = slug(raw)
        n = 1
        while stem in used:
            n += 1
            stem = f"{base}-{n}"
        used.add(stem)
        expect = json.loads(normalize(spec, decoded).to_json())
        fixture = {"envelope": env, "expect": expect}
        files[os.path.join(out_dir, name, f"{stem}.json")] = _json_text(fixture, indent=2) + "\n"
    return Scaffold(files, mapped, todo)


def _json_text(value: object, indent: int | None = None) -> str:
    """JSON keeping non-ASCII text readable, but escaped when it holds a lone surrogate (no UTF-8 form)."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, indent=indent)
    return text


def _sources(where: list[str]) -> str:
    more = f" and {len(where) - 3} more" if len(where) > 3 else ""
    return ", ".join(where[:3]) + more


def _mapping_lines(raw: str, event: str, fields: dict[str, tuple[str, ...]], indent: str) -> list[str]:
    out = [f"{indent}{_scalar(raw)}:", f"{indent}  event: {event}"]
    if fields:
        out.append(f"{indent}  fields:")
        out += [f"{indent}    {f}: {_scalar('.' + '.'.join(p))}" for f, p in fields.items()]
    return out


def write(result: Scaffold, force: bool) -> None:
    """Write every file, or none when one exists and force is off."""
    if not force:
        for path in result.files:
            if os.path.exists(path):
                raise SciontoolError(f"{path}: already exists (use --force to overwrite)")
    for path, text in result.files.items():
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise SciontoolError(f"{path}: cannot write: {exc.strerror or exc}") from None
