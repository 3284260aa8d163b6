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
        with dropout it does. To see it, the shipped weights, which were trained without
        dropout, go into a model with dropout 0.1: they score {dropout_off:z.3f} on the held-out
        batches in evaluation mode and {dropout_on:z.3f} in training mode. That gap is larger
        than a model trained with dropout would show, since these weights never learned to work
        with a tenth of their activations zeroed; but any gap means that a training-mode
        estimate measures another randomly thinned network each time, not the model you will
        use.

        Turning gradients off changes no number: the forward pass computes the same losses. It
        saves the memory and time of recording a graph for a backward pass that never comes,
        since nothing is learned from held-out text.
    """,
    "08.residuals": """
        That for them it measures a cost of training, at one learning rate and one budget, more
        than what the model could reach. At the chapter's rate, {lr:zg}, seed 0 of the model
        without residual connections sat near the loss of letter frequencies alone
        ({unigram:z.3f} nats) until after step 1,000, while the other seeds had left it: at step
        1,000 the held-out estimates ranged from {early_min:z.3f} to {early_max:z.3f}. At
        the end they cost {cost_min:+z.3f} to {cost_max:+z.3f} nats over the full model and were
        still falling; continued to {longer_steps:,} steps, seed 0 went from {longer_start:z.3f}
        to {longer_end:z.3f}. At {other_lr:zg} (seed 0) the same model cost {other_cost:+z.3f}.

        To measure what residuals buy, give every model its own learning rate (a small grid on
        one seed, then several seeds at the best), train each until its curve has flattened,
        and report the spread over seeds. One shared rate and budget favour the model they were
        chosen for, here the full GPT. That skips make a stack easier to train is the usual
        reading (notebook 05 measures the gradient they let through); this table shows the
        effect, not its cause.
    """,
}
