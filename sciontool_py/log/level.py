"""Which agent.log lines are written: SCION_LOG_LEVEL (and the deprecated SCION_DEBUG), as Scion reads them.

A level spec is a comma-separated list: the first bare entry is the default
level, the rest are `component=level` pairs, where a component is a line's
tag (`thinking`, `LIMITS_EXCEEDED`), matched case-insensitively and on dot
boundaries (`hub=debug` covers `hub.auth`). Levels: debug, info, warn (or
warning), error. An invalid default falls back to info, an invalid pair is
dropped. Without SCION_LOG_LEVEL, any SCION_DEBUG value means debug.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

LEVELS = {"debug": -4, "info": 0, "warn": 4, "warning": 4, "error": 8}  # slog's numbers
_INFO = LEVELS["info"]


def parse_spec(text: str) -> tuple[int, dict[str, int]]:
    """(default level, component -> level) of a level spec."""
    default, components = _INFO, {}
    default_seen = False
    for index, raw in enumerate(text.split(",")):
        entry = raw.strip()
        if not entry:
            continue
        key, is_pair, value = entry.partition("=")
        if not is_pair:
            if index == 0 and not default_seen:  # only the first entry may be bare
                default_seen = True
                default = LEVELS.get(entry.lower(), _INFO)
            continue
        level = LEVELS.get(value.strip().lower())
        key = key.strip().lower()
        if key and level is not None:
            components[key] = level
    return default, components


def from_env(env: Mapping[str, str]) -> tuple[int, dict[str, int]]:
    """The spec the environment sets: SCION_LOG_LEVEL, else SCION_DEBUG (any value: debug).

    Read once per entry point (AgentLog does), as Scion reads it once per process.
    """
    text = env.get("SCION_LOG_LEVEL", "").strip()
    if text:
        return parse_spec(text)
    return (LEVELS["debug"] if env.get("SCION_DEBUG") else _INFO, {})


def enabled(spec: tuple[int, dict[str, int]], level: str, tag: str) -> bool:
    """Whether a line at level (INFO, WARN, ERROR, DEBUG) with this tag is written under spec."""
    default, components = spec
    value = LEVELS[level.lower()]
    if tag and components:
        name = tag.lower()
        while True:
            if name in components:
                return value >= components[name]
            name, dot, _ = name.rpartition(".")
            if not dot:
                break
    return value >= default
