"""Answers of notebook 06 (LayerNorm, Pre-LN vs Post-LN), filled by `answer("06....", ...)`."""

ANSWERS = {
    "06.post-ln-deep": """
        In Post-LN the norm sits on the residual path, so the gradient reaching a block must
        pass through every norm above it. At initialisation every Post-LN block received more
        gradient than the same Pre-LN block, and at the last block the excess grew from
        {ratio_6:z.1f}× at 6 blocks to {ratio_24:z.1f}× at 24 (section 3). In training, the
        deeper the Post-LN stack, the smaller the learning rate it could take: at 8 blocks and
        10⁻² without warmup it stalled at {post_8:z.2f}, the letter-frequency entropy
        ({floor:z.2f}); with a warmup it reached {warm_8:z.2f}; Pre-LN reached {pre_8:z.2f} with no
        warmup at all. Pre-LN keeps the residual path a clean sum, so each block's gradient
        arrives through the identity, untouched by any norm, and large learning rates are safe
        without a ramp.
    """,
    "06.grid-plot": """
        The stalled cells all end near {stalled_value:z.2f}, the unigram entropy ({floor:z.2f}):
        the loss of predicting the same letter frequencies whatever the input. It is the best a
        model can do without using its input, so every run that stopped using it shows about
        the same number, however it got there.

        Why the stalled region reaches smaller learning rates as the stack deepens: Adam moves
        every weight by roughly one learning rate per step, whatever its gradient, so what
        decides is how far such a step moves the model's function, and that grows with depth
        faster for Post-LN. Section 3 shows one side of it: Post-LN's excess gradient at the
        output grew with depth, from {ratio_6:z.1f}× Pre-LN's at 6 blocks to {ratio_24:z.1f}× at
        24. Xiong et al. (2020) trace Post-LN's need for warmup to these large gradients near
        the output; Liu et al. (2020) describe Post-LN as amplifying small weight changes into
        large changes of its output, the more so the deeper it is. A warmup keeps the first
        steps small, which fits what the grid shows: it buys Post-LN one step of learning rate,
        not more.
    """,
    "06.biased-variance": """
        It standardises the d numbers it is given rather than estimating the variance of a
        population they were drawn from, so it uses their own (biased) variance; that is also
        what `nn.LayerNorm` computes. Dividing by d − 1 would scale every output by √((d−1)/d) =
        {shrink:z.4f} at d = {d}.
    """,
    "06.epsilon": """
        Inside the square root, √(σ² + ε). It matters for a nearly constant token: the one in
        section 1 had variance {flat_var:z.1e}, and its normalised output had std
        {std_with:z.3f} with ε against {std_without:z.3f} without, where noise in the fourth
        decimal would be stretched to full size.
    """,
    "06.final-norm": """
        Because the Pre-LN stream is never normalised: it is a raw sum that grows with every
        write. In section 2 its mean size went from {pre_2:z.2f} entering block 2 to
        {pre_out:z.2f} leaving block 12, while Post-LN's stayed at {post_out:z.2f} = √32. The final
        LayerNorm hands the output layer vectors of a fixed size.
    """,
}
