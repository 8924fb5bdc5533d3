"""sciontool-py: Scion's agent hook pipe, both ends, in Python.

Modules guard their typing-only imports with a `TYPE_CHECKING = False` of their own, which
mypy reads as typing's: importing typing costs the hook several milliseconds (it brings re
along), and the hook never imports it (tests/test_hook_cli.py, test_warm_hook_imports_nothing_heavy).
"""

__version__ = "0.2.0"
