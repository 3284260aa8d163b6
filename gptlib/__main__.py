"""`python -m gptlib train|sample`: see gptlib.cli."""

import sys

from gptlib.cli import main

sys.exit(main())
