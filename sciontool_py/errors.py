"""The package's own error types, all here: each carries a one-line message for users.

    Exception
    └── SciontoolError            what an entry point prints as `sciontool COMMAND: message`
        ├── DialectError          a dialect could not be found, read or validated
        ├── EventError            an envelope could not be turned into a canonical event
        ├── ConfigError           a hooks configuration could not be read or is invalid
        ├── EmitError             bad input to `sciontool emit`
        ├── FixtureError          a fixture file that cannot be used
        ├── FixtureMismatch       a fixture's expectation and the dialect's result differ
        ├── HubError              the hub could not be told (logged, never fatal to the hook)
        │   └── Refused           ... and a retry cannot fix it (3xx, 4xx, unusable endpoint)
        └── JSONError (+ValueError)  input Go's decoder would not accept

Anything else reaching an entry point (cli.run, fastpath.guarded, the agentino
callbacks) is an internal error: one line for the user, its traceback in
agent.log at DEBUG.  Exceptions used as control flow inside one module
(fastpath.HelpRequested, dialect.validate's) never leave it and are not listed.
"""


class SciontoolError(Exception):
    """Base of every error the package reports to a user."""


class DialectError(SciontoolError):
    """A dialect could not be found, read or validated."""


class EventError(SciontoolError):
    """An envelope could not be turned into a canonical event."""


class ConfigError(SciontoolError):
    """A hooks configuration could not be read or is invalid."""


class EmitError(SciontoolError):
    """Input to `sciontool emit` (an event name, a JSON option, an agent event) is invalid."""


class FixtureError(SciontoolError):
    """A fixture file that cannot be used."""


class FixtureMismatch(SciontoolError):
    """The fixture's expectation and the dialect's result differ (one line per difference)."""


class HubError(SciontoolError):
    """The hub could not be told; logged by Hub.report, never fatal to the hook.

    reply holds what the server sent (a body, a bad status line), unedited;
    cut says the server sent more than that.
    """

    def __init__(self, message: str, reply: str = "", cut: bool = False) -> None:
        super().__init__(message)
        self.reply = reply
        self.cut = cut


class Refused(HubError):
    """A failure a retry cannot fix: a 3xx or 4xx answer, an unusable endpoint."""


class JSONError(SciontoolError, ValueError):
    """The input is not JSON that Go's decoder would accept."""
