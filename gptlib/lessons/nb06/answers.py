"""Answers of notebook 06 (LayerNorm, Pre-LN vs Post-LN), shown by `Question("06....", ...)`."""

ANSWERS = {
    "06.deep-estimate": """
        The product |x_L|·|∂loss/∂x_L| stayed at about {product:z.4f} at every depth, so the
        gradient entering the stream is that product divided by the stream's size. The size
        grew from {top_6:z.2f} at 6 blocks to {top_24:z.2f} at 24, {growth:z.2f} times for 4
        times the blocks, about √4 = 2, as a sum of L roughly independent writes grows. Doubling
        the depth again should multiply it by about √2, to {top_48_guess:z.1f}, and the gradient
        should fall to about {product:z.4f} / {top_48_guess:z.1f} = {grad_48_guess:z.5f}
        (against {grad_24:z.5f} at 24 blocks). Measured on 4 models of 48 blocks: a stream of
        {top_48:z.2f} and a gradient of {grad_48:z.5f}. The division by the stream's size holds at
        48 blocks too; the √L growth is only a rough rule: from 6 to 24 blocks the stream grew
        {growth:z.2f} times, not 2.
    """,
    "06.grid-plot": """
        What the grid shows: at 10⁻³ Post-LN trains about as well as Pre-LN at every depth; it
        stalls at 3·10⁻² from 4 blocks on and already at 10⁻² with 8. Its stalled cells end within
        0.2 of the letter-frequency entropy ({floor:z.2f}), the loss of a model that predicts the
        same letter frequencies whatever the input.

        Why the threshold falls with depth is not measured here. Section 3 fits one account:
        Post-LN's gradients near the output are several times Pre-LN's, the more so the deeper
        the stack ({ratio_6:z.1f}× at 6 blocks, {ratio_24:z.1f}× at 24), and Xiong et al. (2020)
        trace Post-LN's need for warmup to those large gradients. Liu et al. (2020) give another:
        each Post-LN block leans on its own sublayer, so small weight changes add up to large
        changes of the output, the more so the deeper the stack. A warmup keeps the first steps
        small, which fits what the grid shows: at 8 blocks it buys Post-LN one step of learning
        rate, not more.
    """,
    "06.post-ln-deep": """
        In Post-LN a norm sits on the residual path after every sublayer: the stream keeps one
        size at every depth, and the gradient reaching a block passes through the norms of
        every block above it. At initialisation, averaged over 4 models, every Post-LN block
        received more gradient than the same Pre-LN block, and at the last block the excess
        grew from {ratio_6:z.1f}× at 6 blocks to {ratio_24:z.1f}× at 24. In training, the deeper
        the Post-LN stack, the smaller the learning rate it could take: at 8 blocks and 10⁻²
        without warmup it stalled near the letter-frequency entropy ({floor:z.2f}); with a warmup
        it got off the ground, and Pre-LN went further with no warmup at all. Pre-LN keeps the
        residual path a clean sum: on the identity path from a block's output to the loss the
        gradient meets one norm, the final one, shared by every block, which divides it by the
        size of the stream at the top (the branches of the blocks above add their own share).
        That stream grows with depth, so the gradient entering Pre-LN's stream shrinks gently as
        the stack deepens instead of staying large near the output.
    """,
}
