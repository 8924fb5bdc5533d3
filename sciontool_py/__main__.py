import sys

from sciontool_py.main import entry

sys.exit(entry())
