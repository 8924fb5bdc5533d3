"""The canonical event and its JSON form (Scion's struct tags and order)."""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.vocabulary import DATA_FIELD_ORDER


class CanonicalEvent:
    __slots__ = ("name", "raw_name", "dialect", "data", "raw")

    def __init__(
        self, name: str, raw_name: str, dialect: str, data: dict[str, object], raw: dict[str, object]
    ) -> None:
        self.name = name
        self.raw_name = raw_name
        self.dialect = dialect
        self.data = data  # only fields with a value; see vocabulary.DATA_FIELD_ORDER
        self.raw = raw  # the envelope as decoded

    def text(self, field: str) -> str:
        value = self.data.get(field)
        return value if isinstance(value, str) else ""

    def to_json(self, include_raw: bool = False) -> str:
        """One line of JSON, byte-identical to Go's json.Marshal of the event."""
        parts = ['{"name":', gojson.dumps(self.name)]
        if self.raw_name:
            parts += [',"raw_name":', gojson.dumps(self.raw_name)]
        if self.dialect:
            parts += [',"dialect":', gojson.dumps(self.dialect)]
        fields = [f'"{f}":{_scalar(self.data[f])}' for f in DATA_FIELD_ORDER if self.data.get(f)]
        if include_raw and self.raw:
            # Go writes map keys sorted, struct fields in declaration order.
            fields.append('"raw":' + gojson.dumps(self.raw))
        parts += [',"data":{', ",".join(fields), "}}"]
        return "".join(parts)


def _scalar(value: object) -> str:
    if value is True:
        return "true"
    if isinstance(value, int):
        return str(value)  # token counts are int64 in Go
    return gojson.dumps(value)
