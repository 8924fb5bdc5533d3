"""One canonical event as the drainer needs it: a small, bounded JSON record made by the hook.

The hook writes it after answering; the drainer (another process, maybe
seconds later) turns it into spans, log records and metric points.  It
carries the event's time (the hook's wall clock, nanoseconds: a span's
start and end come from two processes, so both are stamped where the
event happened) and the variables that label it.  Its text has passed
Scion's privacy policy already (settings.Policy, keyed by the attribute
each value becomes), so the spool holds nothing that may not leave.
"""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.console import cut
from sciontool_py.telemetry.settings import RECORD_VARIABLES, Policy
from sciontool_py.vocabulary import TOKEN_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from sciontool_py.event import CanonicalEvent

VERSION = 1
# Bytes of one attribute value (a tool's output can be megabytes; an OTLP receiver takes 4 MiB a
# request): longer values are cut and end in "...".
VALUE_LIMIT = 8 * 1024
# The event's text fields that a span and its log record carry as attributes, when non-empty.
ATTRIBUTE_FIELDS = (
    "session_id",
    "tool_name",
    "tool_input",
    "tool_output",
    "file_path",
    "prompt",
    "source",
    "reason",
    "message",
)
# What a spool record keeps: those, the model (a label, cut apart) and the error (an end's outcome).
TEXT_FIELDS = (*ATTRIBUTE_FIELDS, "model", "error")


def make(event: CanonicalEvent, time_ns: int, env: Mapping[str, str], policy: Policy) -> bytes:
    """The record's bytes (one JSON object), each text as policy lets it leave (before the cut:
    a hash is of the whole value, as Scion's receiver sees it)."""
    data: dict[str, object] = {}
    for field in TEXT_FIELDS:
        text = event.text(field)
        if text:
            data[field] = cut(policy.value(field, text), VALUE_LIMIT)
    for field in (*TOKEN_FIELDS, "api_calls"):  # api_calls: the model calls a transcript told
        count = event.data.get(field)
        if type(count) is int and count > 0:
            data[field] = count
    if event.data.get("success") is True:
        data["success"] = True
    record = {
        "v": VERSION,
        "time_ns": time_ns,
        "name": event.name,
        "raw_name": cut(policy.value("event.raw_name", event.raw_name), VALUE_LIMIT),
        "dialect": policy.value("event.dialect", event.dialect),
        "data": data,
        "env": {name: env[name] for name in RECORD_VARIABLES if env.get(name)},
    }
    return gojson.dumps(record).encode("utf-8", "surrogatepass")
