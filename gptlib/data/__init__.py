"""Data for notebooks 07 and 08: the character tokenizer, corpora, the split and batch sampling."""

from gptlib.data.batches import BatchSampler, train_val_split
from gptlib.data.corpora import default_corpus, load_corpus, tiny_shakespeare
from gptlib.data.sonnets import SONNETS
from gptlib.data.tokenizer import CharTokenizer

__all__ = [
    "SONNETS",
    "BatchSampler",
    "CharTokenizer",
    "default_corpus",
    "load_corpus",
    "tiny_shakespeare",
    "train_val_split",
]
