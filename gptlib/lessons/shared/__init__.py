"""What several lessons run: the lesson variants of the model and the small experiments and plots
more than one notebook uses (`experiments`, `plots`), and the exercise references a later lesson
runs (`references`). It imports no lesson."""
