"""How the stdin reader knows an envelope is whole without decoding it (issue 28, item 7): it
counts the brackets outside strings chunk by chunk. Strings full of brackets, quotes and
backslashes, cut at every byte, against the real hook with the pipe left open, and in process
against json.loads of what has arrived."""

from __future__ import annotations

import json
import time

from conftest import HANG_BOUND, Agent
from hypothesis import given, settings
from hypothesis import strategies as st

from sciontool_py.receiver.stdin import _Shape

TRICKY = ['a\\"b', "\\", "\\\\", '"', "[{", "}]", '\\"}', "x\\\\\\", "]]]}}}", "\u00e9[\ufffd"]


def test_a_cut_through_an_escape_never_hides_the_end_of_the_object(agent: Agent) -> None:
    # Each write ends inside an escape (after its backslash): the reader must carry it over,
    # or the quote after it would open a string and the object would never look whole.
    envelope = json.dumps({"hook_event_name": "PreToolUse", "tool_name": 'a\\"b', "tool_input": TRICKY})
    data = envelope.encode()
    cuts = [i + 1 for i, byte in enumerate(data) if byte == 0x5C]  # after each backslash
    proc = agent.start_hook()
    assert proc.stdin is not None and proc.stderr is not None
    started = time.monotonic()
    for start, stop in zip([0, *cuts], [*cuts, len(data)], strict=True):
        proc.stdin.write(data[start:stop])
        proc.stdin.flush()
        time.sleep(0.1)  # a pause: the reader looks at what it has
    try:
        proc.wait(timeout=HANG_BOUND)  # the pipe stays open: taken at the last pause
    finally:
        proc.kill()
        proc.stdin.close()
    assert (proc.returncode, proc.stderr.read()) == (0, b"")
    assert time.monotonic() - started < 10  # well before the 10 s deadline would refuse it
    assert agent.info["toolName"] == 'a\\"b'


texts = st.lists(st.sampled_from(TRICKY) | st.text(max_size=4), max_size=6)
values = st.recursive(
    st.none() | st.integers() | texts.map("".join),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts.map("".join), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(texts.map("".join), values, max_size=4), st.data())
def test_the_shape_is_whole_exactly_when_what_came_is_one_object(
    envelope: dict[str, object], data: st.DataObject
) -> None:
    raw = (
        json.dumps(envelope, ensure_ascii=data.draw(st.booleans())) + data.draw(st.sampled_from(["", " \n"]))
    ).encode()
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(raw) - 1)), max_size=12)))
    shape = _Shape()
    for start, stop in zip([0, *cuts], [*cuts, len(raw)], strict=True):
        shape.feed(raw[start:stop])
        try:
            whole = isinstance(json.loads(raw[:stop]), dict)
        except ValueError:
            whole = False
        assert shape.whole_object() == whole, (raw, stop)
