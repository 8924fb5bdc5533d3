"""The canonical event and its JSON form (Scion's struct tags and order)."""

from __future__ import annotations

from sciontool_py.codec import GO
from sciontool_py.vocabulary import DATA_FIELD_ORDER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.codec import GoCodec

_RANK = {field: rank for rank, field in enumerate(DATA_FIELD_ORDER)}


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

    def head(self, codec: GoCodec = GO) -> bytes:
        """The JSON line up to the data object: `{"name":..,"raw_name":..,"dialect":..,"data":`."""
        parts = ['{"name":', codec.marshal(self.name)]
        if self.raw_name:
            parts += [',"raw_name":', codec.marshal(self.raw_name)]
        if self.dialect:
            parts += [',"dialect":', codec.marshal(self.dialect)]
        parts.append(',"data":')
        return "".join(parts).encode()

    def to_json_bytes(self, include_raw: bool = False, codec: GoCodec = GO) -> bytes:
        """One line of JSON (no newline), byte-identical to Go's json.Marshal of the event."""
        return self.head(codec) + data_json(codec, self.data, self.raw if include_raw else None) + b"}"

    def to_json(self, include_raw: bool = False, codec: GoCodec = GO) -> str:
        return self.to_json_bytes(include_raw, codec).decode()


def in_struct_order(data: dict[str, object]) -> dict[str, object]:
    """data as Go writes the struct: declaration order, a false `success` left out."""
    if data.get("success") is False:
        data = {key: value for key, value in data.items() if key != "success"}
    if len(data) == 2:  # the usual case, without a sort
        first, second = data
        if _RANK[first] > _RANK[second]:
            return {second: data[second], first: data[first]}
        return data
    if len(data) > 2:
        return {key: data[key] for key in sorted(data, key=_RANK.__getitem__)}
    return data


def data_json(codec: GoCodec, data: dict[str, object], raw: dict[str, object] | None) -> bytes:
    """The `data` object: its fields in struct order, then the envelope as `raw` (a map: keys sorted)."""
    out = codec.fields(in_struct_order(data))
    if raw:
        raw_json = b'"raw":' + codec.marshal_bytes(raw)
        out = out[:-1] + (b"," if len(out) > 2 else b"") + raw_json + b"}"
    return out
