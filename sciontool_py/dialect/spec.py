"""A validated dialect in the compact form the hook uses.

Built by ``dialect.load`` from dialect.yaml (or from its cached compiled
form); holds nothing but plain data so it can be stored as JSON.
"""

from __future__ import annotations

from sciontool_py.dialect.options import DialectOptions
from sciontool_py.vocabulary import FIELD_KINDS

FORMAT_VERSION = 4  # bump when the compiled form below (or what a YAML file compiles to) changes
NAME_REGEX = "[a-z0-9][a-z0-9._-]*"  # what valid_name() accepts, for the JSON Schema
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _NAME_START | frozenset("._-")


def valid_name(name: str) -> bool:
    """[a-z0-9][a-z0-9._-]*: a dialect name is also a folder name, so no path tricks."""
    return bool(name) and name[0] in _NAME_START and _NAME_CHARS.issuperset(name)


class Mapping:
    __slots__ = ("event", "fields", "nested", "top_payloads", "top_strings")

    def __init__(self, event: str, fields: dict[str, tuple[str, ...]]) -> None:
        self.event = event
        self.fields = fields  # canonical data field -> path segments
        # What normalization walks per envelope, split so the common case (a
        # top-level key for a string or payload field) costs one lookup.
        top = {f: path[0] for f, path in fields.items() if len(path) == 1}
        self.top_strings = tuple((f, key) for f, key in top.items() if FIELD_KINDS[f] == "string")
        self.top_payloads = tuple((f, key) for f, key in top.items() if FIELD_KINDS[f] == "any")
        self.nested = tuple(
            (f, FIELD_KINDS[f], path)
            for f, path in fields.items()
            if f not in top or FIELD_KINDS[f] not in ("string", "any")
        )


class DialectSpec:
    __slots__ = ("name", "name_fields", "mappings", "responses", "options", "source")

    def __init__(
        self,
        name: str,
        name_fields: tuple[str, ...],
        mappings: dict[str, Mapping],
        responses: dict[str, object],
        options: dict[str, object],
        source: str,
    ) -> None:
        self.name = name
        self.name_fields = name_fields  # raw event name is the first non-empty one
        self.mappings = mappings
        self.responses = responses
        self.options = DialectOptions(options)  # typed once, here
        self.source = source

    def to_json(self) -> dict[str, object]:
        return {
            "format": FORMAT_VERSION,
            "dialect": self.name,
            "event_name_fields": list(self.name_fields),
            "mappings": {
                raw: {"event": m.event, "fields": {k: list(v) for k, v in m.fields.items()}}
                for raw, m in self.mappings.items()
            },
            "responses": self.responses,
            "options": self.options.given,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict) -> DialectSpec:  # type: ignore[type-arg]
        if data.get("format") != FORMAT_VERSION:
            raise ValueError("compiled dialect has another format version")
        return cls(
            name=data["dialect"],
            name_fields=tuple(data["event_name_fields"]),
            mappings={
                raw: Mapping(m["event"], {k: tuple(v) for k, v in m["fields"].items()})
                for raw, m in data["mappings"].items()
            },
            responses=data["responses"],
            options=data["options"],
            source=data["source"],
        )
