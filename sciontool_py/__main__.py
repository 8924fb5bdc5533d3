import sys

from sciontool_py.main import main

sys.exit(main())
