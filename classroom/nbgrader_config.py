"""nbgrader settings for the course directory `classroom/`, read by `scripts/classroom.py`.

nbgrader's own commands read it too when run from this folder (`cd classroom && nbgrader ...`).
"""

import sys
from pathlib import Path

from nbgrader.converters import GenerateAssignment

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from editions import STUDENT_EDITION  # noqa: E402 (the course's scripts are not a package)

c = get_config()  # noqa: F821 (traitlets defines get_config when it loads this file)

# Autograding runs whole notebooks; the training cells of the later ones take minutes on a CPU
# (nbgrader's default allows 30 s per cell).
c.Execute.timeout = 600

# The student version: nbgrader's own steps, with the course's student-edition preprocessors
# (scripts/editions.py, which also writes the workbook) in place of its ClearSolutions and
# ClearOutput, so that both student versions are made the same way.
_OURS = {p.__name__: p for p in STUDENT_EDITION}
_steps = []
for _step in GenerateAssignment.class_traits()["preprocessors"].default():
    if _step.__name__ == "ClearSolutions":
        _steps += list(STUDENT_EDITION)
    elif _step.__name__ not in _OURS:
        _steps.append(_step)
c.GenerateAssignment.preprocessors = _steps
