"""The sending side: core-agent's hook dispatcher (pkg/hooks) in Python.

``load_config`` reads the hooks of a `.agents/config.json`; a ``Dispatcher``
fires them for an agent's events under core-agent's rules. The ADK plugin
lives in ``sciontool_py.emitter.adk`` (imports google-adk).
"""

from sciontool_py.emitter.config import (
    DEFAULT_TIMEOUT_SECONDS,
    KNOWN_EVENTS,
    Handler,
    HooksConfig,
    load_config,
)
from sciontool_py.emitter.dispatcher import Dispatcher
from sciontool_py.emitter.firing import Firing, ThinkingWindow
from sciontool_py.emitter.gate import AllowAll, DenyPatterns, PermissionGate

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "KNOWN_EVENTS",
    "AllowAll",
    "DenyPatterns",
    "Dispatcher",
    "Firing",
    "Handler",
    "HooksConfig",
    "PermissionGate",
    "ThinkingWindow",
    "load_config",
]
