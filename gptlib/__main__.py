"""`python -m gptlib train|sample|upgrade`: see gptlib.cli."""

import sys

from gptlib.cli import main

sys.exit(main())
