"""An ADK plugin that feeds a Dispatcher: the hook wiring core-agent has, for Python ADK agents.

Importing this module imports google-adk (``pip install 'sciontool-py[adk]'``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from google.adk.plugins.base_plugin import BasePlugin

if TYPE_CHECKING:
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.events.event import Event

    from sciontool_py.emitter.dispatcher import Dispatcher


class SciontoolHooksPlugin(BasePlugin):
    """Fires core-agent's hooks for an ADK Runner's events.

    Every event the runner yields (partial ones too, with streaming) goes to
    ``Dispatcher.on_event``; the end of each run, which is one turn, to
    ``on_turn_end`` (also when the run fails, as core-agent's post-turn
    cleanup does). Handlers run in a worker thread that the callback awaits,
    so hooks keep the agent's order without blocking the event loop.
    The plugin never changes an event.
    """

    def __init__(self, dispatcher: Dispatcher, name: str = "sciontool_hooks") -> None:
        super().__init__(name)
        self.dispatcher = dispatcher

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: Event) -> None:
        if not self.dispatcher.empty:
            await asyncio.to_thread(self.dispatcher.on_event, event)

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        if not self.dispatcher.empty:
            await asyncio.to_thread(self.dispatcher.on_turn_end)

    async def on_run_error_callback(self, *, invocation_context: InvocationContext, error: Exception) -> None:
        # ADK skips after_run when the run fails; the turn is over all the same.
        if not self.dispatcher.empty:
            await asyncio.to_thread(self.dispatcher.on_turn_end)
