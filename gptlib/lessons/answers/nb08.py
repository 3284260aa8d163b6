"""Answers of notebook 08 (train and sample), filled by `answer("08....", ...)`."""

ANSWERS = {
    "08.curves": """
        The held-out text is Shakespeare too, so what the model learns first (which characters
        are common, which follow which, where lines break, that a speech opens with a name and
        a colon, as the samples show) holds for it as much as for the training text. And in {steps}
        steps of 12 windows of 64 characters the model read {seen:,} characters, fewer than the
        {train_chars:,} of the training text: far too little to remember passages. So both
        curves fall together: the held-out loss went from {first_val:z.3f} to {last_val:z.3f},
        ending {gap:+z.3f} above the training estimate.

        If the held-out curve flattened while the training curve kept falling, the model would
        be learning things that hold only for the training text, such as its particular lines:
        memorisation, or overfitting. The held-out loss is the one to believe; stop there, or
        give the model more data or more regularisation.
    """,
    "08.no-residuals": """
        Without a residual connection a block's output replaces its input, so the character at
        position t reaches the output only through what attention copies. At initialisation the
        queries and keys are small, so each row of attention weights is spread almost evenly
        over all earlier characters, and the current character, the best single clue to the
        next one, arrives diluted in a blur of the whole window; the model must first learn to
        attend to it just to match the bigram. In 250
        steps it did not: {one_head:z.3f} against the bigram's {bigram:z.3f} nats.

        With x + F(x) the embedding of the current character passes straight through every
        block, so from the first step the output can read the current character as a bigram
        model does, and attention and the MLP only have to add what they can. That rung reached
        {residuals:z.3f}: the largest drop of the ladder. The same identity path carries
        gradients back to the first layers of deep stacks (notebook 05).
    """,
    "08.one-head": """
        Parameters are not the point: a head has one softmax, one pattern of weights over the
        past that sums to 1. At a dot the answer needs two sharp lookups at once, the latest
        letter and the latest digit, at distances that vary. One head can only split its weight
        between them: it put {one_letter:z.3f} on the latest letter, {one_digit:z.3f} on the
        latest digit and the remaining {one_rest:z.3f} elsewhere, and reached an accuracy of
        {one_accuracy:z.3f}. Four heads of width 4 have four softmaxes: one put
        {four_letter:z.3f} on the latest letter, another {four_digit:z.3f} on the latest digit,
        and the accuracy was {four_accuracy:z.3f}.
    """,
    "08.temperature-top-k": """
        Temperature 0.5 doubles the differences between the logits before the softmax, so the
        likely characters gain and the unlikely ones lose: after our prompt the most likely
        character's probability rose from {top_1:z.3f} to {top_half:z.3f} and the entropy fell
        from {entropy_1:z.3f} to {entropy_half:z.3f} nats. Top-k = 5 sets every logit outside the
        five largest to −∞, so only five characters can be drawn, and their probabilities are
        renormalised to sum to 1: the most likely one rose to {top5:z.3f}.
    """,
    "08.kv-cache": """
        With the causal mask, a position's keys and values depend only on the tokens up to it,
        so appending a token changes none of the earlier ones: computing them once and reusing
        them gives the same numbers as recomputing them, and the same logits give the same
        greedy token. Both ways read exactly the same windows (the slide when the window is
        full happens at the same step), which is why the {n_new} generated tokens were
        identical for windows of {windows} positions.
    """,
}
