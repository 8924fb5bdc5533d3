"""sciontool-py: Scion's agent hook pipe, both ends, in Python."""

__version__ = "0.1.0"
