"""An assistant turn's content as Scion classifies it: typed blocks, and the text a user sees.

Claude Code hands its final answer to the Stop hook as a string, a string
holding a JSON array of content blocks, or the array itself; its transcript
holds the same blocks. Scion keeps every block in `assistant_content` and
only the text blocks in `assistant_text`, so thinking never reaches a chat.
"""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.errors import JSONError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

# unicode.IsSpace, what Go's strings.TrimSpace trims (str.strip() also trims U+001C..U+001F).
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def go_trim_space(text: str) -> str:
    return text.strip(_GO_SPACE)


class AssistantContent:
    """Scion's assistant_content: the classified blocks of an assistant turn, in order.

    Each block is (type, text): type `text`, `thinking`, `tool_use`,
    `tool_result`, `error` or another the harness sent; text may be empty.
    """

    __slots__ = ("blocks",)

    def __init__(self, blocks: list[tuple[str, str]]) -> None:
        self.blocks = blocks

    def text_only(self) -> str:
        """The user-visible text: the text blocks joined, trimmed (thinking left out)."""
        return go_trim_space("".join(text for kind, text in self.blocks if kind == "text"))

    def has_thinking(self) -> bool:
        return any(kind == "thinking" for kind, _ in self.blocks)

    def to_json(self, marshal: Callable[[object], str]) -> str:
        """Go's struct form: {"blocks":[{"type":..,"text":..}]}, an empty text left out."""
        blocks = (
            '{"type":' + marshal(kind) + (',"text":' + marshal(text) if text else "") + "}"
            for kind, text in self.blocks
        )
        return '{"blocks":[' + ",".join(blocks) + "]}"


def from_message(value: object) -> AssistantContent | None:
    """The content of a Stop envelope's final message (a string, a string holding a JSON
    array of blocks, or an array of blocks); None when it holds none."""
    if type(value) is str:
        text = go_trim_space(value)
        if not text:
            return None
        if len(text) >= 2 and text[0] == "[":
            blocks = _blocks_in_json(text)
            if blocks:
                return AssistantContent(blocks)
        return AssistantContent([("text", text)])
    if type(value) is list:
        blocks = _classify_all(item for item in value if type(item) is dict)
        return AssistantContent(blocks) if blocks else None
    return None


def transcript_blocks(content: object) -> list[tuple[str, str]]:
    """The blocks of one assistant entry's `message.content` in a transcript."""
    if type(content) is str:
        text = go_trim_space(content)
        return [("text", text)] if text else []
    objects = _objects(content)
    return _classify_all(objects) if objects is not None else []


def _blocks_in_json(text: str) -> list[tuple[str, str]]:
    # Go decodes into []map[string]interface{}: anything else in the array fails the whole
    # string, and it counts as blocks only when some element has a "type" key.
    try:
        objects = _objects(gojson.loads(text))
    except JSONError:
        return []
    if objects is None or not any("type" in item for item in objects):
        return []
    return _classify_all(objects)


def _objects(value: object) -> list[dict[str, object]] | None:
    """An array of objects (null counts as an empty one), else None."""
    if type(value) is not list:
        return None
    if not all(item is None or type(item) is dict for item in value):
        return None
    return [item or {} for item in value]


def _classify_all(objects: Iterable[dict[str, object]]) -> list[tuple[str, str]]:
    return [block for block in map(_classify, objects) if block is not None]


def _classify(block: dict[str, object]) -> tuple[str, str] | None:
    kind = _text(block, "type")
    if not kind:
        return None  # no type: not a block
    if kind == "text":
        return kind, _text(block, "text")
    if kind == "thinking":
        return kind, _text(block, "thinking") or _text(block, "text")
    if kind == "tool_use":
        return kind, _text(block, "name")
    if kind == "tool_result":
        return kind, _text(block, "content") or _text(block, "text")
    return kind, _text(block, "text") or _text(block, "content")


def _text(block: dict[str, object], key: str) -> str:
    value = block.get(key)
    return value if type(value) is str else ""
