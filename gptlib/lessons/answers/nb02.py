"""Answers of notebook 02 (scaled dot-product attention), filled by `answer("02....", ...)`."""

ANSWERS = {
    "02.divided-by-dk": """
        std = √128 / 128 = {expected_std:z.3f} (measured {std:z.3f}). The scores are nearly equal,
        so every row is close to uniform: mean max weight {max_weight:z.3f} against 1/16 =
        {uniform:z.4f}. The opposite failure: attention can hardly prefer any key. The exercise
        check above recognises this mistake.
    """,
    "02.training-stall": """
        Unscaled, the scores spread with std about √512 = {sqrt_dk:z.1f}, so each softmax is nearly
        one-hot on a pair picked by the random weights, not by the query: in most examples the
        head reads a wrong pair, and the loss sits near guessing, ln 16 = {chance:z.2f} nats.

        The size of the gradient is not the problem: on W_Q it is {ratio_low:z.1f} to
        {ratio_high:z.1f} times the scaled head's over five seeds, and Adam sizes each step from
        the recent size of the gradient anyway. Where it comes from is. What teaches a head to
        read the queried pair flows through that pair's weight, which is nearly 0 unless the
        pair already competes for the top: in the unscaled head the three largest of 32 examples
        carry at least {top3_unscaled:z.0%} of the gradient on the queried pair's score, in the
        scaled head at most {top3_scaled:z.0%}. The unscaled head learns which key to read only
        from the few examples in which it already reads the right one: a problem of credit
        assignment, and a slow start that speeds up as those examples grow.
    """,
}
