"""Answers of notebook 08 (train and sample), filled by `Question("08....", ...)`."""

ANSWERS = {
    "08.curves": """
        Partly, and not yet in the way that should stop training. The held-out text is
        Shakespeare too, so most of what the model learns (which characters follow which, where
        lines and speeches break, common words) holds for it as much as for the training text,
        and the held-out estimate kept falling: {last_val:z.3f} at the end, against
        {mid_val:z.3f} at step {mid:,}. But {gap:z.2f} nats of what it learned hold only for the
        training text, which it read {times:z.1f} times over ({read:,} characters). The held-out
        text is not simply harder: counted bigrams, which cannot learn a passage, score
        {bigram_train:z.3f} on the training pairs they were counted from and {bigram_val:z.3f}
        on held-out pairs, a gap of a few hundredths.

        Overfitting that matters shows as a held-out curve that flattens or rises while the
        training curve keeps falling: from then on more steps only fit the training text. The
        held-out estimate is the one to watch; stop there, or give the model more data or more
        regularisation (dropout, weight decay).
    """,
    "08.estimate-mode": """
        Evaluation mode turns dropout off, and that can change the numbers. The models of this
        notebook have no dropout (0, the chapter's choice), so for them the mode changes nothing;
        with dropout it does. The shipped weights in a model with dropout 0.1 score
        {dropout_off:z.3f} on the held-out batches in evaluation mode and {dropout_on:z.3f} in
        training mode, where every estimate measures another randomly thinned network, not the
        model you will use.

        Turning gradients off changes no number: the forward pass computes the same losses. It
        saves the memory and time of recording a graph for a backward pass that never comes,
        since nothing is learned from held-out text.
    """,
    "08.ladder": """
        That a short run measures how fast a model starts to learn, not what it can learn.
        After 250 steps the one-head model scored {one_head_early:z.3f} against the bigram's
        {bigram_early:z.3f} (means of the seeds): without residual connections the current
        character reaches the output only through attention's mix of positions, which must
        first learn where to look. After {steps:,} steps
        the one-head model ended at {one_head_end:z.3f}, below the bigram's {bigram_end:z.3f},
        and the order of the rungs kept changing until step {reorder:,}. A ladder of 250-step
        runs would have said that attention hurts.

        So compare pieces once their curves have stopped crossing, on several seeds, and at
        the budget you will really train with: what wins a short race need not win a long one.
    """,
}
