"""sciontool-py: Scion's agent hook pipe, both ends, in Python."""

__version__ = "0.2.0"
