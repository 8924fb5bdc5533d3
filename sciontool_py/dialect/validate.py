"""dialect.yaml -> DialectSpec, with every problem reported at its line.

Strict on purpose: a typo in a dialect otherwise shows up only as a wrong
status display in Scion, long after the file was written.
"""

from __future__ import annotations

import difflib
import math

import yaml

from sciontool_py.dialect.options import USAGE_FORMS
from sciontool_py.dialect.spec import DialectSpec, Mapping, valid_name
from sciontool_py.dialect.yaml12 import BINARY_TAG, NULL_TAG, Timestamp, Yaml12Loader
from sciontool_py.vocabulary import ACTIVITY_FOR_EVENT, EVENTS, FIELD_KINDS

# Problems reported before checking stops: a hostile file can hold tens of thousands,
# and finding them all costs seconds and a hundred MB on every hook.
MAX_PROBLEMS = 100

TOP_LEVEL_KEYS = (
    "dialect",
    "event_name_field",
    "event_name_fields",
    "mappings",
    "responses",
    "options",
)
MAPPING_KEYS = ("event", "fields")
# Options for what YAML paths cannot express.
OPTION_KINDS = {
    # agent-end: the value at the assistant_text path is a Claude-style final message
    # (a string, a string holding a JSON array of content blocks, or the array):
    # assistant_content keeps every block, assistant_text only the text ones.
    "assistant_blocks": bool,
    # agent-end: when the envelope has no assistant text, read it from the
    # Claude-style JSONL transcript named by `transcript_path`.
    "transcript_assistant_text": bool,
    # tool-start of one of these tools means the agent now waits for the user.
    "input_tools": list,
    # Raw events (mapped ones) that mean the user answered: while the agent is
    # waiting_for_input, their activity replaces it, as a tool-start's does.
    "resumes_after_wait": list,
    # Status true to the agent (handlers/truth.py), each off unless set:
    # envelope paths holding the harness's tool call id; set (even empty) tracks open calls.
    "call_id_fields": list,
    # Raw events (mapped ones) that end every open call of their session.
    "batch_end_events": list,
    # After session-end, a late event of that session (but session-start) changes nothing.
    "ended_sessions_stay_ended": bool,
    # session-start sources (compact) that leave the status as it was.
    "keep_state_sources": list,
    # Raw events (mapped ones) that count only for the session this agent's session-start named.
    "own_session_events": list,
    # Raw events (mapped ones) that end a turn the user interrupted.
    "interrupt_events": list,
    # agent-end assistant texts that stand for no answer: a failed turn, no reply for the hub.
    "no_reply_texts": list,
    # Raw events (mapped ones) after which the harness calls the model, with no hook of its own.
    "model_call_events": list,
    # Raw events (mapped ones) that report an error, not a question: status unchanged, logged as one.
    "error_events": list,
    # Envelope path of the harness's event time: a session-start older than an applied event
    # of its session (the two fired together) keeps the activity.
    "stamp_field": str,
    # Raw events (mapped ones) that take a session up again after its end: the phase reads running.
    "resume_events": list,
    # The harness announces each model request (model-start): a prompt-submit reads working.
    "thinking_from_model_start": bool,
    # The harness exits without a session end: a detached watcher says it (handlers/exit_watch.py).
    "watch_harness_exit": bool,
    # Raw events (mapped ones) the harness fires once per streamed chunk of a model response...
    "stream_events": list,
    # ...of which only the chunk with a value at this path ends the step (a finish reason).
    "stream_end_field": str,
    # A prompt-submit while a tool call is open is queued by the harness: it starts nothing yet.
    "queued_prompts": bool,
    # Where the harness records its token usage: its transcript, in this form (handlers/usage.py).
    "usage_transcript": str,
    # The harness's input count holds its cache reads and writes (Scion's contract excludes them).
    "usage_input_has_cache": bool,
}
# Options that name raw events, each of which must be in 'mappings'.
_EVENT_OPTIONS = (
    "resumes_after_wait",
    "batch_end_events",
    "own_session_events",
    "interrupt_events",
    "model_call_events",
    "error_events",
    "resume_events",
    "stream_events",
)


class Problem:
    __slots__ = ("path", "line", "col", "message", "severity")

    def __init__(self, path: str, line: int, col: int, message: str, severity: str = "error") -> None:
        self.path = path
        self.line = line
        self.col = col
        self.message = message
        self.severity = severity

    def __str__(self) -> str:
        prefix = "" if self.severity == "error" else "warning: "
        where = f"{self.path}:{self.line}:{self.col}" if self.line else self.path  # line 0: the whole file
        return f"{where}: {prefix}{self.message}"


class _TooManyProblems(Exception):
    pass


class _NoAliasLoader(Yaml12Loader):
    """yaml.v3's scalars; refuses YAML aliases: a dialect needs none, and they allow alias bombs."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not allowed in a dialect file", event.start_mark
            )
        return super().compose_node(parent, index)


def _parse_with_libyaml(loader: _NoAliasLoader, text: str) -> bool:
    """Feed loader the events of libyaml's C parser, when PyYAML has it; True if so.

    Only the parsing moves to C: the loader's own composer, resolver and
    constructor still build every node and value, so the result is the same,
    six times faster (a 1 MiB file composes in under a second, not five).
    """
    try:
        from yaml._yaml import CParser
    except ImportError:  # PyYAML built without libyaml
        return False
    events = CParser(text)
    loader.check_event = events.check_event  # type: ignore[method-assign]
    loader.peek_event = events.peek_event  # type: ignore[method-assign]
    loader.get_event = events.get_event  # type: ignore[method-assign]
    return True


def suggest(word: str, choices: tuple[str, ...] | list[str]) -> str:
    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def path_segments(path: str) -> tuple[str, ...] | None:
    """Split a dotted payload path; None when it is malformed."""
    if path != path.strip():
        return None
    segments = tuple((path[1:] if path.startswith(".") else path).split("."))
    if any(not s for s in segments):
        return None
    return segments


class _Checker:
    def __init__(self, text: str, path: str) -> None:
        self.path = path
        self.text = text
        self.problems: list[Problem] = []
        # (line, col) of each mapping, field path and response, so `dialect check`
        # can warn at the right place; keyed ("mappings", raw[, field]) / ("responses", raw).
        self.marks: dict[tuple[str, ...], tuple[int, int]] = {}

    def mark(self, key: tuple[str, ...], node: yaml.Node) -> None:
        self.marks[key] = (node.start_mark.line + 1, node.start_mark.column + 1)

    def problem(self, node: yaml.Node | yaml.Mark | None, message: str) -> None:
        mark = node.start_mark if isinstance(node, yaml.Node) else node
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.problems.append(Problem(self.path, line, col, message))
        if len(self.problems) >= MAX_PROBLEMS:
            raise _TooManyProblems

    def value(self, node: yaml.Node) -> object:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            self.problem(getattr(exc, "problem_mark", None) or node, _yaml_message(exc))
            return None

    def key(self, node: yaml.Node) -> str | None:
        """A mapping key read into a Go string: its text as written (`on`, `5`, `2026-01-01`),
        as yaml.v3 reads any scalar into a string; None for null, a list or a mapping."""
        value = self.value(node)  # still constructed: a bad explicit tag is an error
        if not isinstance(node, yaml.ScalarNode) or (value is None and node.tag == NULL_TAG):
            return None
        if node.tag == BINARY_TAG and isinstance(value, str):
            return value  # yaml.v3 reads the decoded bytes
        text: str = node.value
        return text

    def string(self, node: yaml.Node, what: str) -> str | None:
        # Stricter than Go for values: `dialect: 5` would be "5" there, and is a mistake here.
        value = self.value(node)
        if isinstance(value, str) and value:
            return value
        self.problem(node, f"{what} must be a non-empty string")
        return None

    def pairs(
        self, node: yaml.Node, what: str, allowed: tuple[str, ...] | None = None
    ) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """The (key, key node, value node) pairs of a mapping, keys checked; null is empty."""
        if _is_null(node):
            return []
        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{what} must be a mapping")
            return []
        seen: set[str] = set()
        out = []
        for key_node, value_node in node.value:
            key = self.key(key_node)
            if key is None:
                self.problem(key_node, f"{what}: key {self.value(key_node)!r} must be a string")
                continue
            if key in seen:
                self.problem(key_node, f"{what}: duplicate key {key!r}")
                continue
            seen.add(key)
            if allowed is not None and key not in allowed:
                self.problem(key_node, f"{what}: unknown key {key!r}{suggest(key, allowed)}")
                continue
            out.append((key, key_node, value_node))
        return out

    def run(self) -> DialectSpec | None:
        try:
            # PyYAML checks every character up front; a NUL or escape character is refused here.
            self.loader = _NoAliasLoader(self.text)
        except yaml.reader.ReaderError as exc:
            self.problems.append(_bad_character(self.path, self.text, exc))
            return None
        try:
            # libyaml reads `\/` as `/`; PyYAML's scanner here refuses it, as yaml.v3 does.
            if "\\/" in self.text or not _parse_with_libyaml(self.loader, self.text):
                root = self.compose()
            else:
                try:
                    root = self.compose()
                except yaml.YAMLError:  # libyaml words errors its own way: PyYAML's parser says it
                    self.loader = _NoAliasLoader(self.text)
                    root = self.compose()
        except yaml.YAMLError as exc:
            self.problem(getattr(exc, "problem_mark", None), _yaml_message(exc))
            return None
        return self.check(root)

    def compose(self) -> yaml.Node | None:
        try:
            return self.loader.get_single_node()
        finally:
            self.loader.dispose()

    def check(self, root: yaml.Node | None) -> DialectSpec | None:
        if root is None:
            self.problem(None, "the file is empty")
            return None
        if not isinstance(root, yaml.MappingNode):
            self.problem(root, "dialect file must be a mapping")
            return None
        top = {key: (k, v) for key, k, v in self.pairs(root, "dialect file", TOP_LEVEL_KEYS)}
        name = self.dialect_name(top)
        name_fields = self.name_fields(root, top)
        mappings = self.mappings(top["mappings"][1]) if "mappings" in top else {}
        responses = self.responses(top["responses"][1]) if "responses" in top else {}
        options = self.options(top["options"][1], mappings) if "options" in top else {}
        if self.problems or name is None or name_fields is None:
            return None
        return DialectSpec(name, name_fields, mappings, responses, options, self.path)

    def dialect_name(self, top: dict[str, tuple[yaml.Node, yaml.Node]]) -> str | None:
        if "dialect" not in top:
            self.problem(None, "missing required key 'dialect'")
            return None
        node = top["dialect"][1]
        name = self.string(node, "'dialect'")
        if name is not None and not valid_name(name):
            self.problem(node, f"'dialect' {name!r} must match [a-z0-9][a-z0-9._-]*")
            return None
        return name

    def name_fields(
        self, root: yaml.Node, top: dict[str, tuple[yaml.Node, yaml.Node]]
    ) -> tuple[str, ...] | None:
        if "event_name_fields" in top:
            node = top["event_name_fields"][1]
            if not isinstance(node, yaml.SequenceNode) or not node.value:
                self.problem(node, "'event_name_fields' must be a non-empty list of field names")
                return None
            fields = [self.string(item, "each of 'event_name_fields'") for item in node.value]
            if "event_name_field" in top:
                self.string(top["event_name_field"][1], "'event_name_field'")
            return tuple(f for f in fields if f) if all(fields) else None
        if "event_name_field" in top:
            field = self.string(top["event_name_field"][1], "'event_name_field'")
            return (field,) if field else None
        self.problem(root, "missing required key 'event_name_field' or 'event_name_fields'")
        return None

    def mappings(self, node: yaml.Node) -> dict[str, Mapping]:
        out = {}
        for raw, raw_node, entry in self.pairs(node, "'mappings'"):
            self.mark(("mappings", raw), raw_node)
            where = f"mappings.{raw}"
            if not isinstance(entry, yaml.MappingNode):
                self.problem(entry, f"{where} must be a mapping")
                continue
            keys = {k: v for k, _, v in self.pairs(entry, where, MAPPING_KEYS)}
            if "event" not in keys:
                self.problem(entry, f"{where}: missing required key 'event'")
                continue
            event = self.string(keys["event"], f"{where}.event")
            if event is not None and event not in EVENTS:
                self.problem(
                    keys["event"],
                    f"{where}.event: {event!r} is not a canonical event{suggest(event, EVENTS)}",
                )
            fields = self.fields(keys["fields"], raw) if "fields" in keys else {}
            if event is not None:
                out[raw] = Mapping(event, fields)
        return out

    def fields(self, node: yaml.Node, raw: str) -> dict[str, tuple[str, ...]]:
        where = f"mappings.{raw}"
        out = {}
        field_names = tuple(FIELD_KINDS)
        for field, key_node, path_node in self.pairs(node, f"{where}.fields"):
            if field not in FIELD_KINDS:
                self.problem(
                    key_node,
                    f"{where}.fields: {field!r} is not an event data field{suggest(field, field_names)}",
                )
                continue
            path = self.string(path_node, f"{where}.fields.{field}")
            if path is None:
                continue
            segments = path_segments(path)
            if segments is None:
                self.problem(
                    path_node,
                    f"{where}.fields.{field}: malformed path {path!r} (expected .key or .a.b.c)",
                )
                continue
            self.mark(("mappings", raw, field), path_node)
            out[field] = segments
        return out

    def responses(self, node: yaml.Node) -> dict[str, object]:
        out: dict[str, object] = {}
        for raw, raw_node, value_node in self.pairs(node, "'responses'"):
            self.mark(("responses", raw), raw_node)
            if not isinstance(value_node, yaml.MappingNode):
                self.problem(value_node, f"responses.{raw}: must be a mapping (printed as a JSON object)")
                continue
            known = len(self.problems)
            self.value(value_node)  # every tag one the safe loader knows (no python/...), or a problem
            if len(self.problems) > known:
                continue
            try:
                out[raw] = self.json_value(value_node, f"responses.{raw}", string_keys=True)
            except _NotJSON as refused:
                self.problem(refused.node, refused.message)
        return out

    def json_value(self, node: yaml.Node, where: str, string_keys: bool = False) -> object:
        """What the hook prints for a response value, or _NotJSON where Go's encoder would fail
        (NaN, infinities, dates, non-string keys) or its reader lose digits (|n| > 2^53).

        string_keys: the keys are read into Go strings (a response's own keys), else
        they must be strings themselves."""
        if isinstance(node, yaml.SequenceNode):
            return [self.json_value(item, f"{where}[{i}]") for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            self.loader.flatten_mapping(node)  # merge keys (<<): merged pairs first, then own
            merged: int = node.merged  # type: ignore[attr-defined]
            out: dict[str, object] = {}
            seen: set[str] = set()
            # As yaml.v3: a key written in the mapping wins over a merged one, and of merged
            # ones the first source wins (PyYAML lists later sources first); a key written
            # twice is an error.
            for index in (*range(merged, len(node.value)), *reversed(range(merged))):
                key_node, value_node = node.value[index]
                key = self.key(key_node) if string_keys else self.value(key_node)
                if not isinstance(key, str):
                    raise _NotJSON(key_node, f"{where}: {_CANNOT} the key {key!r}, which is not a string")
                if key in seen:
                    if index >= merged:
                        raise _NotJSON(key_node, f"{where}: duplicate key {key_node.value!r}")
                    continue
                seen.add(key)
                out[key] = self.json_value(value_node, where + _step(key))
            return out
        value = self.value(node)
        problem = _json_problem(value)
        if problem:
            raise _NotJSON(node, f"{where}: {_CANNOT} {problem}")
        return value

    def options(self, node: yaml.Node, mappings: dict[str, Mapping]) -> dict[str, object]:
        out = {}
        for key, _, value_node in self.pairs(node, "'options'", tuple(OPTION_KINDS)):
            value = self.value(value_node)
            kind = OPTION_KINDS[key]
            if (
                not isinstance(value, kind)
                or (kind is list and not all(isinstance(v, str) and v for v in value))  # type: ignore[attr-defined]
                or (kind is str and not value)
            ):
                wanted = {bool: "true or false", str: "a non-empty string"}.get(kind, "a list of strings")
                self.problem(value_node, f"options.{key}: must be {wanted}")
                continue
            if key in _EVENT_OPTIONS and not self.raw_events(key, value_node, value, mappings):  # type: ignore[arg-type]
                continue
            if key in ("stamp_field", "stream_end_field") and path_segments(value) is None:  # type: ignore[arg-type]
                self.problem(value_node, f"options.{key}: {value!r} is not a path (.a.b.c)")
                continue
            if key == "call_id_fields" and not self.paths(key, value_node, value):  # type: ignore[arg-type]
                continue
            if key == "usage_transcript" and value not in USAGE_FORMS:
                self.problem(value_node, f"options.{key}: must be one of {', '.join(USAGE_FORMS)}")
                continue
            out[key] = value
        return out

    def paths(self, key: str, node: yaml.Node, paths: list[str]) -> bool:
        fine = True
        for item, path in zip(node.value, paths, strict=True):
            if path_segments(path) is None:
                self.problem(item, f"options.{key}: {path!r} is not a path (.a.b.c)")
                fine = False
        return fine

    def raw_events(self, key: str, node: yaml.Node, names: list[str], mappings: dict[str, Mapping]) -> bool:
        """Whether each raw name in the option is mapped; for resumes_after_wait, to an event that
        sets an activity: any other name could never replace waiting_for_input."""
        fine = True
        for item, raw in zip(node.value, names, strict=True):
            where = f"options.{key}: {raw!r}"
            mapping = mappings.get(raw)
            if mapping is None:
                self.problem(item, f"{where} is not a raw event in 'mappings'{suggest(raw, list(mappings))}")
                fine = False
            elif key != "resumes_after_wait":
                continue
            elif mapping.event in EVENTS and mapping.event not in ACTIVITY_FOR_EVENT:
                self.problem(item, f"{where} maps to {mapping.event}, which sets no activity")
                fine = False
        return fine


class _NotJSON(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


_CANNOT = "a JSON response cannot carry"


def _json_problem(value: object) -> str:
    """What a scalar is that a JSON response cannot carry as written ('' when it can)."""
    if isinstance(value, Timestamp):
        return f"the date {value} (Scion would print it as a time); quote it to send the text"
    if value is None or isinstance(value, (str, bool)):
        return ""
    if isinstance(value, float):
        return "" if math.isfinite(value) else f"{value} (no JSON number is NaN or infinite)"
    if isinstance(value, int):
        return f"{value}: an integer beyond 2^53 does not survive a float64" if abs(value) > 1 << 53 else ""
    return f"a {type(value).__name__}"


def _step(key: str) -> str:
    """A key in a message's path: `.name`, or `['odd key']` quoted (no control characters)."""
    plain = key and all(c.isalnum() or c in "_-" for c in key)
    return f".{key}" if plain else f"[{key!r}]"


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == NULL_TAG


def _yaml_message(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    text = " ".join(p for p in (context, problem) if p) or str(exc).splitlines()[0]
    return f"invalid YAML: {text}"


Marks = dict[tuple[str, ...], tuple[int, int]]


def check_text_marked(text: str, path: str) -> tuple[DialectSpec | None, list[Problem], Marks]:
    """check_text, plus the (line, col) of each mapping, field path and response."""
    checker = _Checker(text, path)
    try:
        spec = checker.run()
    except RecursionError:  # PyYAML composes and constructs recursively
        return None, [Problem(path, 1, 1, "invalid YAML: nested too deeply")], {}
    except _TooManyProblems:
        stop = Problem(path, checker.problems[-1].line, 1, STOPPED)
        return None, [*checker.problems, stop], checker.marks
    return spec, checker.problems, checker.marks


STOPPED = f"too many problems: checking stopped after {MAX_PROBLEMS}"


def summary(problems: list[Problem]) -> str:
    """The first problem, in one line, and how many more there are."""
    if problems[-1].message == STOPPED:
        return f"{problems[0]} (and more problems: checking stopped after {MAX_PROBLEMS})"
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    return f"{problems[0]}{more}"


def _bad_character(path: str, text: str, exc: yaml.reader.ReaderError) -> Problem:
    code = exc.character if isinstance(exc.character, int) else ord(exc.character)
    line = text.count("\n", 0, exc.position) + 1
    col = exc.position - text.rfind("\n", 0, exc.position)
    return Problem(path, line, col, f"invalid YAML: character U+{code:04X} is not allowed in YAML")


def check_text(text: str, path: str) -> tuple[DialectSpec | None, list[Problem]]:
    """Parse and validate dialect YAML; the spec is None when any problem is found."""
    spec, problems, _ = check_text_marked(text, path)
    return spec, problems
