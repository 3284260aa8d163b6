"""What a graded release ships of each lesson's checks (`harness/nbNN.py`): the objects its
exercises' inputs are made of, and the adapters that run a student's answer. No reference and
no catalogued mistake lives here: those stay in `gptlib/lessons/checks/nbNN.py`, which a graded
release leaves out (see `gptlib.lessons.checks.recorded`). Everything here is defined at module
level, so that the recording (`torch.save`) can name it and the students' copy can load it.
"""
