"""The package's own error types: each carries a one-line message for users."""


class SciontoolError(Exception):
    """Base of every error the package reports to a user."""


class DialectError(SciontoolError):
    """A dialect could not be found, read or validated."""


class EventError(SciontoolError):
    """An envelope could not be turned into a canonical event."""
