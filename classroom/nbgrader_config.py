"""nbgrader settings for the course directory `classroom/`, read by `scripts/classroom.py`.

nbgrader's own commands read it too when run from this folder (`cd classroom && nbgrader ...`).
"""

c = get_config()  # noqa: F821 (traitlets defines get_config when it loads this file)

# Autograding runs whole notebooks; the training cells of the later ones take minutes on a CPU
# (nbgrader's default allows 30 s per cell).
c.Execute.timeout = 600
