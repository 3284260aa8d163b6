"""Answers of notebook 02 (scaled dot-product attention), filled by `answer("02....", ...)`."""

ANSWERS = {
    "02.divided-by-dk": """
        std = √128 / 128 = 1/√128, measured {std:z.3f}. The scores are nearly equal, so every
        row is close to uniform: mean max weight {max_weight:z.3f}, where a uniform row of 16
        keys gives each 1/16. The opposite failure to the unscaled one: attention can hardly
        prefer any key, and what it reads is close to the average of all values. The checks of
        exercises 2 and 3 name this mistake.
    """,
    "02.delay-at-16": """
        At d_k = 16 the unscaled scores spread with std {std_16:z.2f}, not {std_512:z.1f}: the
        softmax is peaked (mean max weight {max_weight_16:z.3f}) but far from one-hot
        ({max_weight_512:z.3f} at 512), so the queried pair keeps a usable weight in many
        examples where it is not the top. Your first_step_gradients on the first batch at
        d_k = 16 shows it: the three largest of 32 examples carry {top3_16:z.0%} of the gradient
        on the queried pair's score, against {top3_512:z.0%} at 512. On section 7's hypothesis,
        many more examples teach the head which key to read from the first step, so it gets going
        sooner: {loss_16:z.1f} nats at steps 150-175, against {loss_512:z.1f} at 512 (seed 0).
        Not a controlled comparison: with the head's input width of 32, d_k = 16 also halves the
        rank of the product of W_Q and W_K.
    """,
}
