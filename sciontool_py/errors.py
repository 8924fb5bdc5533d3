"""The package's own error types: each carries a one-line message for users."""


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
