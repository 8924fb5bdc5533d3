"""Go's decoding of a large JSON document in memory linear in its size, whatever its shape.

gojson.loads makes a Python object of every JSON value: 16 MiB of `[],` is 5.6 million
lists, over half a gigabyte, and 16 MB of small numbers is seconds of callbacks. A document
over gojson.LARGE is read here in runs instead: a regex finds how far the values lying whole
within the next WINDOW bytes reach (to the last comma between them), or, once a container
proves dense, counting its brackets does, and the C scanner decodes that run in one call.
Only a container no run holds (longer than the window, or nested deeper than the regex
looks) gets a frame of its own; [ opened or ] closed back to back are one frame however
many, and a chain of containers each holding a few small values and then the next is read
SLICE levels at a time, so 10,000 levels cost a few steps, not 10,000.

Values are kept as Python objects while what they cost beyond their text stays within the
document's size (BUDGET at most), and only in the top 64 levels; past that, a container is
written back as Go's bytes (what json.Marshal writes for the decoded value, by the codec) and
comes back as one gojson.GoJSON. The top-level object always comes back as a dict, and the
objects in it stay dicts while they fit, so the fields a dialect reads are found as
gojson.loads finds them. Go sorts an object's keys: one of more than SEGMENT members is sorted
a segment at a time and the segments merged, so no object stays in memory per member either.
"""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.codec import GO
from sciontool_py.errors import JSONError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator
    from typing import Any

    from sciontool_py.codec import GoCodec

WINDOW = 64 << 10  # bytes the C scanner decodes at once (at most about 40x that in objects), and
# the regex looks through (its stack: up to 150 bytes a byte)
BUDGET = 16 << 20  # bytes kept Python values may cost beyond their text (the document's size at most)
SEGMENT = 1 << 16  # members of an object sorted at once
BLOCK = 1024  # members per block of a sorted segment: what a merge holds of each segment
_DEPTH = 4  # levels of containers the regex nests (one more in a run: a [] or {} in the view)
_COUNTED_DEPTH = 32  # passes of _nests_within: a run found by counting nests 64 levels at most
SLICE = 200  # levels of a chain read at once (orjson writes 255 at most)
_KEPT_DEPTH = 64  # levels below which nothing is kept as Python objects
CHAIN = 4 << 10  # bytes their openings may take: a container that is no chain costs little
_MAX_DEPTH = gojson.GO_MAX_DEPTH
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
# For _plain: a digit is 0, what may follow one in a float (. e E) is ., all else a space.
_NUMBER_CLASSES = bytes(48 if 0x30 <= b <= 0x39 else 46 if b in b".eE" else 32 for b in range(256))
_LITERALS = {b"true": True, b"false": False, b"null": None}
_FIRST, _NEXT, _AFTER = 0, 1, 2  # what a frame expects: a value or its close; a value; , or close


def loads(data: bytes) -> object:
    """gojson.loads(decode_utf8(data), go_depth=True), in memory linear in len(data) whatever its
    shape: a large document's containers too dense to keep as Python objects come back as
    GoJSON. JSONError when Go would refuse data."""
    if len(data) <= gojson.LARGE:
        return gojson.loads(gojson.decode_utf8(data), go_depth=True)
    value, end = decode(data)
    rest_is_space(data, end)
    return value


def first_value(data: bytes) -> object:
    """The JSON value data starts with (after whitespace), as loads reads it; what follows it is
    ignored. JSONError when data does not start with a complete value."""
    if len(data) <= gojson.LARGE:
        text = gojson.decode_utf8(data)
        if "\\ud" in text or "\\uD" in text:
            text = gojson.replace_surrogate_escapes(text)
        try:
            return gojson.scan(text, len(text) - len(text.lstrip(" \t\n\r")))[0]
        except RecursionError:
            pass  # deeper than the C scanner goes: read as a large document is, to Go's depth
        except (StopIteration, ValueError, SystemError):
            raise JSONError("invalid JSON") from None
    return decode(data)[0]


def _nested(depth: int) -> bytes:
    """A whole container at most depth levels deep (its brackets' kinds are the C scanner's to
    check). A stretch of text is taken whole, atomically (a lookahead's group, then that group
    again), so a failed attempt never splits it anew: backtracking stays linear, and a long
    stretch is one step of the regex's stack, not one a byte."""
    container = b""
    for level in range(depth):
        name = b"t%d" % level
        text = rb"(?=(?P<" + name + rb'>[^\[\]{}"]+))(?P=' + name + rb")"
        inner = rb"(?:" + text + b"|" + _STRING + (b"|" + container if container else b"") + rb")*"
        container = rb"[\[{]" + inner + rb"[\]}]"
    return container


class _Patterns:
    """The regexes, compiled when a large document is first read: importing re and compiling
    cost milliseconds, and the hook imports this module for stdin's payload in any case."""

    def __init__(self) -> None:
        import re

        # A run: text outside strings and brackets (scalars, commas, colons, whitespace; group 1
        # is its last stretch), strings and whole containers. Nothing must follow it, so
        # nothing backtracks.
        self.run = re.compile(rb'(?:([^\[\]{}"]+)|' + _STRING + b"|" + _nested(_DEPTH) + rb")*")
        self.run_flat = re.compile(rb'(?:([^\[\]{}"]+)|' + _STRING + rb")*")  # no container
        self.space = re.compile(rb"[ \t\n\r]*")
        self.string = re.compile(_STRING)
        self.key = re.compile(rb"(" + _STRING + rb")[ \t\n\r]*:")
        self.key_open = re.compile(rb"(" + _STRING + rb")[ \t\n\r]*:[ \t\n\r]*(?=[\[{])")
        self.scalar = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
        self.opens = re.compile(rb"\[(?:[ \t\n\r]*\[)*")
        self.closes = re.compile(rb"\]+")
        # A chain: containers, each holding a few small values (or members) and then the next.
        value = rb'(?:[^\[\]{}",\s]+|' + _STRING + b"|" + _nested(2) + rb")"  # tried at each level
        key = rb"(?:" + _STRING + rb"[ \t\n\r]*:[ \t\n\r]*)"
        opener = rb"[\[{][ \t\n\r]*(?:" + key + rb"?" + value + rb"[ \t\n\r]*,[ \t\n\r]*)*" + key + rb"?"
        self.openers = re.compile(rb"(?:" + opener + rb"(?=[\[{])){2,%d}" % SLICE)
        # Levels holding nothing but the next, or scalars besides: cheaper to try first, since a
        # container among the values is tried at each level (and fails on the next one).
        bare = rb"[\[{][ \t\n\r]*" + key + rb"?(?=[\[{])"
        self.bare_openers = re.compile(rb"(?:" + bare + rb"){2,%d}" % SLICE)
        scalar = rb'(?:[^\[\]{}",\s]+|' + _STRING + rb")"
        flat = rb"[\[{][ \t\n\r]*(?:" + key + rb"?" + scalar + rb"[ \t\n\r]*,[ \t\n\r]*)*" + key + rb"?"
        self.flat_openers = re.compile(rb"(?:" + flat + rb"(?=[\[{])){2,%d}" % SLICE)
        self.closer = rb"(?:[ \t\n\r]*,[ \t\n\r]*" + key + rb"?" + value + rb")*[ \t\n\r]*[\]}]"
        self.closers: dict[int, re.Pattern[bytes]] = {}
        from _json import make_scanner

        self.slice_scan = make_scanner(_SliceContext())  # type: ignore[arg-type]
        self.plain_slice_scan = make_scanner(_PlainSliceContext())  # type: ignore[arg-type]

    def closers_of(self, levels: int) -> re.Pattern[bytes]:
        """The closing of levels containers of a chain, each after a few small values."""
        found = self.closers.get(levels)
        if found is None:
            import re

            found = self.closers[levels] = re.compile(rb"(?:" + self.closer + rb"){%d}" % levels)
        return found


# The one value of a slice of a chain that the slice does not hold: the innermost container,
# read on its own. The slice's text has NaN there (Go refuses NaN, so the document holds none
# that gets this far), and its bytes are \x01, which Go's bytes never hold raw.
_INNER = gojson.GoJSON(b"\x01")


def _inner(name: str) -> object:
    if name != "NaN":
        raise JSONError(f"invalid JSON value {name}")
    return _INNER


class _SliceContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = staticmethod(gojson.number)
    parse_int = staticmethod(gojson.number)
    parse_constant = staticmethod(_inner)


class _PlainSliceContext(_SliceContext):
    """For a slice whose numbers are _plain: the builtin int, which the scanner calls in C."""

    parse_int = int  # type: ignore[assignment]


_compiled: _Patterns | None = None


def _patterns() -> _Patterns:
    global _compiled
    if _compiled is None:
        _compiled = _Patterns()
    return _compiled


def decode(data: bytes, pos: int = 0) -> tuple[object, int]:
    """The JSON value in data at pos (after whitespace), as gojson.loads decodes it but with
    GoJSON for containers past the budget, and where it ends. JSONError when it is not JSON."""
    import gc

    collecting = gc.isenabled()
    # Millions of containers, none in a cycle: the collector would walk them all again and again.
    gc.disable()
    try:
        return _Reader(data).value(pos)
    finally:
        if collecting:
            gc.enable()


def rest_is_space(data: bytes, end: int) -> None:
    """JSONError unless only whitespace follows end."""
    stop = _patterns().space.match(data, end).end()  # type: ignore[union-attr]  # it matches ''
    if stop != len(data):
        raise _error(data, stop, "Extra data")


class _Big:
    """A member too large for a run, as its rope of Go's bytes (an object's merge sorts it in)."""

    __slots__ = ("rope",)

    def __init__(self, rope: list[object]) -> None:
        self.rope = rope


class _Segment:
    """Members of an object sorted by key, as blocks of Go's bytes (each an object's, no braces)
    and the first key of each."""

    __slots__ = ("blocks", "firsts")

    def __init__(self, blocks: list[bytes], firsts: list[str]) -> None:
        self.blocks = blocks
        self.firsts = firsts


class _Frame:
    """An open container (levels of them for brackets opened back to back): what it holds so far.

    Kept: items (an array's values) or members (an object's). Written back: items are pieces of
    Go's bytes and ropes (lists of them), commas included; members (a member too large for a run
    as a _Big) gather until SEGMENT of them are sorted into a _Segment in parts, their _Big ones
    beside it.
    """

    __slots__ = (
        "is_object",
        "keep",
        "levels",
        "items",
        "members",
        "parts",
        "key",
        "cost",
        "state",
        "dense",
        "retry",
        "start",
        "bigs",
        "slice_end",
        "inner",
        "rewind",
        "exact",
    )

    def __init__(self, is_object: bool, keep: bool, levels: int, key: str, start: int) -> None:
        self.is_object = is_object
        self.keep = keep
        self.levels = levels
        self.items: list[object] = []
        self.members: dict[str, object] = {}
        self.parts: list[_Segment | tuple[str, _Big]] = []
        self.key = key  # under which it goes into the object it is a member of
        self.cost = 0  # estimated bytes of what it keeps, its kept children's included
        self.state = _FIRST
        # Runs found by counting brackets, not by the regex's steps: its last run filled half a
        # window, or a small child closed (many may follow). Not before retry: counting missed.
        self.dense = False
        self.retry = start
        self.start = start  # where it opens
        self.bigs: list[str] = []  # keys of members set to a _Big since the last segment
        self.slice_end = 0  # a slice of a chain: where its openers end (0: a container)
        self.inner: object = None  # a slice's innermost container, as a rope once read
        self.rewind = start  # where reading starts again when a slice does not close as one
        self.exact = False  # members may hold floats or -0: written back through the number walk


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.stack: list[_Frame] = []
        self.depth = 0  # levels open: Go refuses more than 10,000
        self.spent = 0  # what the Python values kept cost beyond their text, estimated
        self.budget = min(BUDGET, len(data))  # so that it stays within the 4x of the document's size
        self._codec: GoCodec | None = None
        self._view, self._view_at = b"", 0
        self.p = _patterns()
        self.no_slices_before = 0  # a slice failed to close: what it covered is read a level at a time

    def skip(self, pos: int) -> int:
        """pos after the whitespace at it."""
        data = self.data
        if pos < len(data) and data[pos] > 0x20:  # most often: no whitespace at all
            return pos
        return self.p.space.match(data, pos).end()  # type: ignore[union-attr]  # it matches ''

    def codec(self) -> GoCodec:
        """The codec that writes runs and batches back: orjson when installed (Go's bytes at C
        speed). orjson reserves far more than it writes (500 KiB for 1,024 members, 10 bytes a
        character of a string), so only a slice of its bytes is kept, and single values and
        keys go through gojson."""
        if self._codec is None:
            from sciontool_py.codec import default_codec

            self._codec = default_codec()
        return self._codec

    def value(self, pos: int) -> tuple[object, int]:
        data = self.data
        pos = self.skip(pos)
        char = data[pos : pos + 1]
        if char == b"[" or char == b"{":
            return self.container(self.open(pos, "", pos))
        return self.scalar(pos)

    def container(self, pos: int) -> tuple[object, int]:
        """Read on from pos until the container opened last closes: its value and its end."""
        data, stack = self.data, self.stack
        while True:
            frame = stack[-1]
            pos = self.skip(pos)
            if frame.slice_end:  # a slice of a chain: its innermost container, then its closing
                if frame.inner is None:
                    pos = self.open(pos, "", pos)
                else:
                    pos = self.close_slice(frame, pos)
                continue
            char = data[pos : pos + 1]
            closer = b"}" if frame.is_object else b"]"
            state = frame.state
            if state == _NEXT or (state == _FIRST and char != closer):
                pos = self.element(frame, pos)
            elif char == b"," and state == _AFTER:
                frame.state = _NEXT
                pos += 1
            elif char == closer:
                done, pos = self.close(pos)
                if done is not None:
                    return done[0], pos
            else:
                expected = "',' or '}'" if frame.is_object else "',' or ']'"
                raise _error(data, pos, f"Expecting {expected} delimiter")

    def element(self, frame: _Frame, pos: int) -> int:
        """Read a run of values at pos, or the one value no run can hold; the position after."""
        data = self.data
        start = pos
        if frame.dense and pos >= frame.retry:
            comma = _dense_cut(data, pos, min(len(data), pos + WINDOW))
            run = data[pos:comma] if comma > pos else b""
            if run and _nests_within(run, min(_COUNTED_DEPTH, (_MAX_DEPTH - self.depth) // 2)):
                plain = not frame.keep and _plain(run)
                try:
                    values = self.decode_run(run, pos, frame.is_object, plain)
                except JSONError:  # counting met the brackets of what follows (or bad JSON)
                    pass
                else:
                    self.store(frame, run, values, plain)
                    frame.state = _NEXT
                    return comma + 1
            frame.dense = False  # the regex decides, for a window at least
            frame.retry = pos + WINDOW
        if frame.is_object and frame is not self.stack[0]:
            # A member whose value is a container, in an object that was too large for a run
            # itself: a link of a chain, most likely, which no run would hold either.
            found = self.p.key_open.match(data, pos)
            if found is not None:
                return self.open(found.end(), _string(data, found.start(1), found.end(1)), pos)
        if self.depth + _DEPTH + 1 > _MAX_DEPTH:  # near Go's limit: every container gets a frame
            pattern, view, at = self.p.run_flat, data, 0
        else:
            pattern = self.p.run
            view, at = self.view(pos)
        found = pattern.match(view, pos - at, min(len(data), pos + WINDOW) - at)
        assert found is not None  # it matches the empty string
        stop = found.end() + at
        if stop > pos:
            after = view[stop - at : stop - at + 1]  # not data's: the window may end inside a \0\0
            if after == b"]" or after == b"}":
                self.take(frame, pos, stop)
                frame.state = _AFTER
                return stop
            comma = _last_comma(view, pattern, found, pos - at) + at
            if comma > pos:
                self.take(frame, pos, comma)
                frame.state = _NEXT
                frame.dense = comma - pos >= WINDOW // 2
                return comma + 1
        key = ""
        if frame.is_object:
            found = self.p.key.match(data, pos)
            if found is None:
                raise _error(data, pos, "Expecting property name enclosed in double quotes")
            key = _string(data, found.start(1), found.end(1))
            pos = self.skip(found.end())
        char = data[pos : pos + 1]
        if char == b"[" or char == b"{":
            return self.open(pos, key, start)
        value, pos = self.scalar(pos)
        self.add(frame, key, value, False)
        frame.state = _AFTER
        return pos

    def view(self, pos: int) -> tuple[bytes, int]:
        """The document from before pos to at least WINDOW past it, with [] and {} made plain
        text (the regex steps into each container it meets: 16 MiB of [] would cost it seconds),
        and where that view begins. Made anew each WINDOW bytes, so each byte is copied twice."""
        view, at = self._view, self._view_at
        if pos < at or (pos + WINDOW > at + len(view) and at + len(view) < len(self.data)):
            view = self.data[pos : pos + 2 * WINDOW].replace(b"[]", b"\0\0").replace(b"{}", b"\0\0")
            self._view, self._view_at = view, pos
            at = pos
        return view, at

    def open(self, pos: int, key: str, rewind: int) -> int:
        """Push a frame for the bracket(s) at pos (its member or element starting at rewind); the
        position after them."""
        data, stack = self.data, self.stack
        if data[pos] == 0x7B:  # {
            is_object, levels, end = True, 1, pos + 1
        else:
            found = self.p.opens.match(data, pos)
            assert found is not None
            is_object, levels, end = False, found.group().count(b"["), found.end()
        # [ back to back are one frame already; else a chain may be read a slice at a time.
        if levels == 1 and stack and not stack[-1].keep and pos >= self.no_slices_before:
            sliced = self.open_slice(pos, key, rewind)
            if sliced:
                return sliced
        self.depth += levels
        if self.depth > _MAX_DEPTH:
            raise JSONError(f"invalid JSON: exceeded max depth of {_MAX_DEPTH}")
        cost = 200 * levels  # a container of a few values, as a level of a chain holds
        # Kept within the budget, and only near the top: no dialect reads a field 64 levels down,
        # and a deep chain written back is read 200 levels at a time, not one.
        keep = not stack or (
            stack[-1].keep and self.depth <= _KEPT_DEPTH and self.spent + cost <= self.budget
        )
        frame = _Frame(is_object, keep, levels, key, pos)
        if keep:
            frame.cost = cost
            self.spent += cost
        stack.append(frame)
        return end

    def open_slice(self, pos: int, key: str, rewind: int) -> int:
        """Push a frame for up to SLICE levels of a chain at pos, each holding a few small values
        and then the next (only its innermost container is read on its own); the position of
        that container, or 0 when there is no such chain at pos."""
        data = self.data
        end = min(len(data), pos + CHAIN)
        found, levels = None, 0
        for pattern in (self.p.bare_openers, self.p.flat_openers, self.p.openers):  # the longest
            match = pattern.match(data, pos, end)
            if match is not None and (found is None or match.end() > found.end()):
                found, levels = match, gojson.nesting(match.group())[0]
                if levels == SLICE:
                    break
        if found is None:
            return 0
        text = found.group()
        if self.depth + levels + _DEPTH + 1 > _MAX_DEPTH or b"NaN" in text or b"Infinity" in text:
            return 0
        self.depth += levels
        frame = _Frame(text[0:1] == b"{", False, levels, key, pos)
        frame.slice_end = found.end()
        frame.rewind = rewind
        self.stack.append(frame)
        return found.end()

    def close_slice(self, frame: _Frame, pos: int) -> int:
        """The closing of a slice whose innermost container was read: the slice decoded and
        written back in one step each, the container's rope where NaN stood; the position after.
        When it does not close so, its text is read again a level at a time."""
        data = self.data
        found = self.p.closers_of(frame.levels).match(data, pos, min(len(data), pos + WINDOW))
        out = b""
        if found is not None and b"NaN" not in found.group() and b"Infinity" not in found.group():
            raw = data[frame.start : frame.slice_end] + b"NaN" + found.group()
            plain = _plain(raw)
            text = gojson.decode_utf8(raw)
            if "\\ud" in text or "\\uD" in text:
                text = gojson.replace_surrogate_escapes(text)
            try:
                value, end = (self.p.plain_slice_scan if plain else self.p.slice_scan)(text, 0)
            except (StopIteration, ValueError, SystemError):  # JSONError too: bad JSON is read again
                end = -1
            if end == len(text):
                codec = self.codec()
                out = (codec.marshal_plain if plain else codec.marshal_bytes)(value)
        self.stack.pop()
        self.depth -= frame.levels
        if out.count(b"\x01") != 1:
            self.no_slices_before = pos + 1  # past the innermost container: once is enough
            return frame.rewind  # read again, a level at a time
        cut = out.index(b"\x01")
        parent = self.stack[-1]
        self.add(parent, frame.key, [out[:cut], frame.inner, out[cut + 1 :]], True)
        parent.state = _AFTER
        if (found.end() - frame.start) * 16 < WINDOW:  # type: ignore[union-attr]
            parent.dense = True
        return found.end()  # type: ignore[union-attr]

    def take(self, frame: _Frame, start: int, stop: int) -> None:
        """Decode the run data[start:stop] into frame."""
        run = self.data[start:stop]
        plain = not frame.keep and _plain(run)
        self.store(frame, run, self.decode_run(run, start, frame.is_object, plain), plain)

    def decode_run(self, run: bytes, start: int, is_object: bool, plain: bool) -> Any:
        """The values of run (from start in the document) as Go decodes them; plain: with its
        integers as int (_plain: the builtin reads them as Go does), to be written back."""
        text = gojson.decode_utf8(run)
        if "\\ud" in text or "\\uD" in text:
            text = gojson.replace_surrogate_escapes(text)
        wrapped = "{" + text + "}" if is_object else "[" + text + "]"
        scan = gojson.scan_plain if plain else gojson.scan
        try:
            value, end = scan(wrapped, 0)
        except JSONError:
            raise
        except (StopIteration, ValueError, SystemError):
            raise _run_error(self.data, start, wrapped) from None
        if end != len(wrapped):
            raise _error(self.data, start + len(wrapped[1:end].encode()), "Extra data")
        return value

    def store(self, frame: _Frame, run: bytes, values: Any, plain: bool) -> None:
        """A run's values into frame: kept, or written back (plain: decoded so)."""
        if frame.keep:
            cost = _cost(run)
            frame.cost += cost
            self.spent += cost
            if frame.is_object:
                frame.members.update(values)
            else:
                frame.items += values
            if self.spent > self.budget and not (frame.is_object and frame is self.stack[0]):
                self.let_go(frame)  # the envelope's own object stays one, whatever it holds
        elif frame.is_object:
            frame.members.update(values)
            frame.exact = frame.exact or not plain
            if len(frame.members) >= SEGMENT:
                self.flush(frame)
        else:
            codec = self.codec()
            if frame.items:
                frame.items.append(b",")
            frame.items.append((codec.marshal_plain if plain else codec.marshal_bytes)(values)[1:-1])

    def let_go(self, frame: _Frame) -> None:
        """frame stops keeping its values: they are written back as Go's bytes."""
        frame.keep = False
        frame.exact = True
        self.spent -= frame.cost
        frame.cost = 0
        if not frame.is_object and frame.items:
            frame.items = [self.codec().marshal_bytes(frame.items)[1:-1]]
        elif len(frame.members) >= SEGMENT:
            self.flush(frame)

    def flush(self, frame: _Frame) -> None:
        """frame's members so far become a sorted segment, and their _Big ones parts of their own
        (their keys are the segment's no longer: which comes first does not matter)."""
        members = frame.members
        for key in dict.fromkeys(frame.bigs):
            if type(members.get(key)) is _Big:
                frame.parts.append((key, members.pop(key)))  # type: ignore[arg-type]
        frame.bigs = []
        if not members:
            return
        items = sorted(members.items())
        codec = self.codec()
        marshal = codec.marshal_bytes if frame.exact else codec.marshal_plain
        blocks = [marshal(dict(items[i : i + BLOCK]))[1:-1] for i in range(0, len(items), BLOCK)]
        frame.parts.append(_Segment(blocks, [items[i][0] for i in range(0, len(items), BLOCK)]))
        frame.members = {}
        frame.exact = False

    def add(self, frame: _Frame, key: str, value: object, is_rope: bool) -> None:
        """A value no run held into frame: a scalar, or a closed child (a rope when written back)."""
        if frame.slice_end:
            frame.inner = value  # a rope: a slice's frames are written back
            return
        if frame.keep:
            if is_rope:
                value = gojson.GoJSON(_flatten(value))  # type: ignore[arg-type]
            if frame.is_object:
                frame.members[key] = value
            else:
                frame.items.append(value)
        elif frame.is_object:
            if is_rope:
                value = _Big(value)  # type: ignore[arg-type]
                frame.bigs.append(key)
            frame.members[key] = value
        else:
            if frame.items:
                frame.items.append(b",")
            frame.items.append(value if is_rope else GO.marshal_bytes(value))

    def close(self, pos: int) -> tuple[tuple[object] | None, int]:
        """Close what the bracket(s) at pos close; ((value,), end) once the first frame closes."""
        data, stack = self.data, self.stack
        frame = stack[-1]
        if frame.is_object:
            count, end = 1, pos + 1
        else:
            found = self.p.closes.match(data, pos)
            assert found is not None
            end = found.end()
            count = end - pos
        value: object
        while True:
            frame = stack[-1]
            if frame.is_object:
                self.depth -= 1
                count -= 1
                value = frame.members if frame.keep else self.object_rope(frame)
            else:
                shut = min(count, frame.levels)
                count -= shut
                self.depth -= shut
                frame.levels -= shut
                if frame.keep:
                    value = frame.items
                    for _ in range(shut - 1):
                        value = [value]
                else:
                    value = [b"[" * shut, frame.items, b"]" * shut]
                if frame.levels:  # brackets opened back to back: the next one out holds value
                    frame.items = [value]
                    frame.state = _AFTER
                    return None, end
            stack.pop()
            if not stack:
                if not frame.keep:
                    value = gojson.GoJSON(_flatten(value))  # type: ignore[arg-type]
                return (value,), pos + 1 if frame.is_object else end - count
            parent = stack[-1]
            if frame.keep:
                parent.cost += frame.cost
            self.add(parent, frame.key, value, not frame.keep)
            parent.state = _AFTER
            if (end - count - frame.start) * 16 < WINDOW:  # a small child: many more may follow
                parent.dense = True
            if not count or parent.slice_end:  # a slice matches its own closing
                return None, end - count
            if parent.is_object:  # a ] where the object wants } (or a comma)
                raise _error(data, end - count, "Expecting ',' or '}' delimiter")

    def object_rope(self, frame: _Frame) -> list[object]:
        """Go's bytes of a written-back object: its members sorted by key, the last of a key winning."""
        members = frame.members
        if not frame.parts:  # what it holds fits in memory: sorted at once
            if len(members) == 1:
                ((key, value),) = members.items()
                if type(value) is _Big:  # a link of a chain: its one member too large for a run
                    return [b"{", GO.marshal_bytes(key), b":", value.rope, b"}"]
            rope: list[object] = [b"{"]
            self.write_sorted(rope, members, frame.bigs, not frame.exact)
            rope.append(b"}")
            return rope
        self.flush(frame)
        parts = frame.parts
        rope = [b"{"]
        if len(parts) == 1 and isinstance(parts[0], _Segment):
            for block in parts[0].blocks:
                _comma(rope)
                rope.append(block)
        else:
            for members, bigs, plain in _buckets(parts):
                self.write_sorted(rope, members, bigs, plain)
        rope.append(b"}")
        return rope

    def write_sorted(
        self, rope: list[object], members: dict[str, object], bigs: list[str], plain: bool
    ) -> None:
        """members into rope in key order: the values in batches (plain: with no float or long
        integer), a _Big one (its key in bigs, unless a later value replaced it) as its rope."""
        from bisect import bisect_left

        items = sorted(members.items())
        codec = self.codec()
        marshal = codec.marshal_plain if plain else codec.marshal_bytes
        bigs = sorted(key for key in set(bigs) if type(members[key]) is _Big)
        start = 0
        for stop in (*(bisect_left(items, key, key=_first) for key in bigs), len(items)):
            for at in range(start, stop, BLOCK):
                _comma(rope)
                rope.append(marshal(dict(items[at : min(stop, at + BLOCK)]))[1:-1])
            if stop < len(items):
                key, big = items[stop]
                _comma(rope)
                rope += [GO.marshal_bytes(key), b":", big.rope]  # type: ignore[attr-defined]
            start = stop + 1

    def scalar(self, pos: int) -> tuple[object, int]:
        """A string, number or literal at pos (one too long for a run, or the whole document)."""
        data = self.data
        if data[pos : pos + 1] == b'"':
            found = self.p.string.match(data, pos)
            if found is None:
                raise _error(data, pos, "Unterminated string starting at")
            return _string(data, pos, found.end()), found.end()
        found = self.p.scalar.match(data, pos)
        if found is None:
            raise _error(data, pos, "Expecting value")
        token = found.group()
        if token in _LITERALS:
            return _LITERALS[token], found.end()
        return gojson.number(token.decode()), found.end()


def _plain(text: bytes) -> bool:
    """Whether text has only numbers the builtin int reads as Go reads them and orjson writes as
    Go writes them: no float (a digit, then . e or E), no -0 (Go: a float -0), no integer of 16
    digits (a float64 rounds past 2^53). A string holding such text only costs the slower way."""
    classes = text.translate(_NUMBER_CLASSES)
    return b"-0" not in text and b"0." not in classes and b"0000000000000000" not in classes


def _last_comma(data: bytes, run: re.Pattern[bytes], found: re.Match[bytes], pos: int) -> int:
    """Where the last comma between values in the run found at pos is; -1 when there is none.
    It is in the last stretch of text outside strings and brackets, unless that stretch follows
    a key (`"key": ` before a value too large): then in the stretch before the key."""
    for _ in range(3):
        start, stop = found.span(1)
        if start < 0:
            return -1
        comma = data.rfind(b",", start, stop)
        if comma >= 0 or start <= pos:
            return comma
        found = run.match(data, pos, start)  # type: ignore[assignment]  # it matches the empty string
    return -1


def _cost(run: bytes) -> int:
    """About what the run's values cost as Python objects beyond their text: a container 80
    bytes, a value 40, a string 50 (a long string costs its text: counted in the document's)."""
    return (
        80 * (run.count(b"[") + run.count(b"{"))
        + 40 * (run.count(b",") + run.count(b":"))
        + 25 * run.count(b'"')
    )


def _nests_within(run: bytes, passes: int) -> bool:
    """Whether run's containers nest at most 2 * passes deep: the C scanner nests 10,000 deep
    on Python 3.13 (about 1,000 before), and Go's limit is counted in frames. Each pass takes out
    the innermost [] then {}: one level at least, two at most."""
    shape = gojson.brackets(run)[0]
    for _ in range(passes):
        if not shape:
            return True
        shape = shape.replace(b"[]", b"").replace(b"{}", b"")
    return not shape


def _dense_cut(data: bytes, pos: int, end: int) -> int:
    """The last comma in data[pos:end] between the values of the container being read (its
    values from pos on), found by counting brackets (gojson.nesting) back from the last comma
    over a few more; -1 when those all lie inside a value."""
    comma = data.rfind(b",", pos, end)
    if comma < 0:
        return -1
    depth, in_string = gojson.nesting(data[pos:comma])
    for _ in range(16):
        if not depth and not in_string:
            return comma
        before = data.rfind(b",", pos, comma)
        if before < 0:
            return -1
        part = data[before:comma]
        in_string ^= part.replace(b"\\\\", b"").replace(b'\\"', b"").count(b'"') % 2 == 1
        depth -= gojson.nesting(part, in_string)[0]
        comma = before
    return -1


def _string(data: bytes, start: int, stop: int) -> str:
    """The JSON string data[start:stop] (quotes included), as Go decodes it."""
    from _json import scanstring

    raw = data[start + 1 : stop - 1]
    if raw.isascii() and b"\\" not in raw and (not raw or min(raw) >= 0x20):  # a plain key
        return raw.decode()
    text = gojson.decode_utf8(data[start:stop])
    if "\\ud" in text or "\\uD" in text:
        text = gojson.replace_surrogate_escapes(text)
    try:
        value: str = scanstring(text, 1, True)[0]
    except ValueError as exc:
        raise _error(data, start, str(exc).split(":")[0]) from None
    return value


def _buckets(
    parts: list[_Segment | tuple[str, _Big]],
) -> Iterator[tuple[dict[str, object], list[str], bool]]:
    """An object's members, from its parts in the order written, as dicts over successive key
    ranges (with the keys set to a _Big, and whether all was _plain): each holds about 64
    blocks from all the segments together (plus one a segment has across each bound), the last
    value of a key winning. Blocks are dropped once passed."""
    from bisect import bisect_left, bisect_right
    from itertools import pairwise

    segments = [part for part in parts if isinstance(part, _Segment)]
    firsts = sorted(key for segment in segments for key in segment.firsts)
    bounds: list[str | None] = [None, *firsts[64::64], None]
    for low, high in pairwise(bounds):
        members: dict[str, object] = {}
        bigs = []
        plain = True
        for part in parts:
            if not isinstance(part, _Segment):
                key, big = part
                if (low is None or key >= low) and (high is None or key < high):
                    members[key] = big
                    bigs.append(key)
                continue
            blocks, keys = part.blocks, part.firsts
            first = bisect_right(keys, low) - 1 if low is not None else 0
            stop = bisect_left(keys, high) if high is not None else len(keys)
            for index in range(max(first, 0), stop):
                block = blocks[index]
                plain = plain and _plain(block)
                items = list(_decode_block(block).items())
                begin = bisect_left(items, low, key=_first) if low is not None else 0
                end = bisect_left(items, high, key=_first) if high is not None else len(items)
                members.update(items[begin:end])
                if high is None or index + 1 < stop:
                    blocks[index] = b""  # wholly below high: no later bucket reads it
        yield members, bigs, plain


def _decode_block(block: bytes) -> dict[str, object]:
    # Go's bytes: the builtin int reads each number in them as marshal needs it (one past
    # 2^53 is written back as Go writes it), but -0.
    scan = gojson.scan if b"-0" in block else gojson.scan_plain
    decoded: dict[str, object] = scan("{" + gojson.decode_utf8(block) + "}", 0)[0]
    return decoded


def _first(item: tuple[str, object]) -> str:
    return item[0]


def _comma(rope: list[object]) -> None:
    """A comma into an object's rope unless it is at its first member."""
    if len(rope) > 1:
        rope.append(b",")


def _flatten(rope: list[object]) -> bytes:
    """The bytes of a rope: pieces and ropes nested as deep as the document (so no recursion)."""
    out: list[bytes] = []
    pending: list[Iterator[object]] = [iter(rope)]
    while pending:
        for piece in pending[-1]:
            if type(piece) is list:
                pending.append(iter(piece))
                break
            out.append(piece)  # type: ignore[arg-type]
        else:
            pending.pop()
    return b"".join(out)


def _run_error(data: bytes, start: int, wrapped: str) -> JSONError:
    """Why a run is not JSON, in the stdlib parser's words, at its place in the document."""
    import json

    try:
        json.loads(wrapped)
    except json.JSONDecodeError as exc:
        return _error(data, start + len(wrapped[1 : exc.pos].encode()), exc.msg)
    except RecursionError:  # cannot happen: a run holds _DEPTH levels
        pass
    return JSONError("invalid JSON")


def _error(data: bytes, pos: int, message: str) -> JSONError:
    line = data.count(b"\n", 0, pos) + 1
    column = pos - data.rfind(b"\n", 0, pos)
    return JSONError(f"invalid JSON: {message}: line {line} column {column}")
