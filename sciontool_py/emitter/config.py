"""The `"hooks"` key of `.agents/config.json`, loaded and validated as core-agent does at startup."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from sciontool_py.errors import ConfigError

# core-agent's declaration order; its error message lists them in this order.
KNOWN_EVENTS: tuple[str, ...] = ("tool-start", "tool-end", "model-start", "agent-end")
DEFAULT_TIMEOUT_SECONDS = 10  # core-agent's default (Scion's Antigravity harness caps hooks at 10 s)


@dataclass(frozen=True)
class Handler:
    """One shell command run for an event; ``timeout_seconds`` 0 means the default."""

    command: str
    timeout_seconds: int = 0

    @property
    def timeout(self) -> int:
        return self.timeout_seconds or DEFAULT_TIMEOUT_SECONDS


HooksConfig = Mapping[str, "tuple[Handler, ...]"]
"""Event name -> its handlers, in the order they run."""

EMPTY: HooksConfig = MappingProxyType({})


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def valid_events() -> str:
    """The known events as Go's ``%v`` prints core-agent's slice."""
    return "[" + " ".join(KNOWN_EVENTS) + "]"


def unknown_event(name: str) -> ConfigError:
    return ConfigError(f"hooks: unknown event {json.dumps(name)} (valid: {valid_events()})")


def _handler(event: str, index: int, value: object) -> Handler:
    where = f"hooks: event {json.dumps(event)} handler #{index}"
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be an object with a command (got {_kind(value)})")
    command = value.get("command")
    if command is not None and not isinstance(command, str):
        raise ConfigError(f"{where}: command must be a string (got {_kind(command)})")
    if not command:  # core-agent checks == "" only: a blank-but-not-empty command passes
        raise ConfigError(f"{where}: command is required")
    timeout = value.get("timeout_seconds")
    if timeout is None:
        timeout = 0
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise ConfigError(f"{where}: timeout_seconds must be an integer (got {_kind(timeout)})")
    if timeout < 0:
        raise ConfigError(f"{where}: timeout_seconds must be non-negative (got {timeout})")
    return Handler(command, timeout)


def parse_hooks(value: object) -> HooksConfig:
    """Validate the decoded `"hooks"` value; ConfigError names the event and handler at fault.

    Events are checked in sorted order, as core-agent does, so the same file
    reports the same first error in both programs.
    """
    if value is None:
        return EMPTY
    if not isinstance(value, dict):
        raise ConfigError(f"hooks: must be an object of event name -> handler list (got {_kind(value)})")
    config: dict[str, tuple[Handler, ...]] = {}
    for event in sorted(value):
        if event not in KNOWN_EVENTS:
            raise unknown_event(event)
        handlers = value[event]
        if handlers is None:
            handlers = []
        if not isinstance(handlers, list):
            raise ConfigError(
                f"hooks: event {json.dumps(event)}: handlers must be a list (got {_kind(handlers)})"
            )
        if handlers:
            config[event] = tuple(_handler(event, i, h) for i, h in enumerate(handlers))
    return MappingProxyType(config) if config else EMPTY


def load_config(path: str) -> HooksConfig:
    """Read a core-agent config file (`.agents/config.json`) and return its validated hooks.

    Keys other than `"hooks"` are ignored; a file without hooks gives an
    empty config. Errors are ConfigError, one line, starting with the path.
    """
    try:
        with open(path, encoding="utf-8") as stream:
            document = json.load(stream)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid JSON: nested too deeply") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: must be a JSON object (got {_kind(document)})")
    try:
        return parse_hooks(document.get("hooks"))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
