"""Answers of notebook 00 (start here), filled by `answer("00....", ...)`."""

ANSWERS = {
    "00.gpt2-vocabulary": """
        With GPT-2's {vocab:,} tokens the same model holds {total:,} parameters. The blocks do
        not change ({blocks:,}); the embedding table and the unembedding grow by 256 parameters
        a token (a row of 128 numbers in each, the measurement above), so they now hold
        {vocab_share:z.0%} of the model, against {small_share:z.0%} with 65 characters. Small
        models with large vocabularies are mostly embeddings; notebook 09 shows the opposite
        for Llama 2 7B.
    """,
}
