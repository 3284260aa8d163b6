"""Checkpoints: exact resume, atomic writes, and clear errors for unsafe, foreign or cut files."""

import builtins
import os

import pytest
import torch

import gptlib.checkpoint as checkpoint_module
from gptlib import GPT, GPTConfig, seed_everything
from gptlib.checkpoint import load_checkpoint, save_checkpoint
from gptlib.data import SONNETS, CharTokenizer, train_val_split
from gptlib.train import TrainConfig, Trainer

TOKENIZER = CharTokenizer.from_text(SONNETS)
TRAIN_IDS, VAL_IDS = train_val_split(TOKENIZER.encode(SONNETS))
MODEL_CONFIG = GPTConfig(
    vocab_size=TOKENIZER.vocab_size, d_model=32, n_heads=4, n_layers=2, max_len=16, dropout=0.1
)
TRAIN_CONFIG = TrainConfig(
    steps=16, batch_size=4, block_size=16, warmup_steps=4, eval_interval=4, eval_batches=2
)


def fresh_trainer(seed: int = 0) -> Trainer:
    seed_everything(seed)
    return Trainer(GPT(MODEL_CONFIG), TRAIN_IDS, VAL_IDS, TRAIN_CONFIG)


def test_stop_and_resume_equals_an_uninterrupted_run(tmp_path):
    # dropout is on, so the resumed run must also restore torch's global generator
    uninterrupted = fresh_trainer()
    uninterrupted.run(progress=False)

    first_half = fresh_trainer()
    first_half.run(max_steps=7, progress=False)
    path = save_checkpoint(tmp_path / "run.pt", first_half.model, TOKENIZER, first_half)
    torch.manual_seed(123)  # disturb the global generator: the checkpoint must restore it
    saved = load_checkpoint(path)
    resumed = saved.resume(GPT(saved.model_config), TRAIN_IDS, VAL_IDS)
    resumed.run(progress=False)

    assert resumed.history.train_loss == uninterrupted.history.train_loss  # bit for bit
    # the paused run also measured the held-out loss at step 7, where it stopped
    assert resumed.history.eval_step == [0, 4, 7, 8, 12, 16]
    assert uninterrupted.history.eval_step == [0, 4, 8, 12, 16]
    del resumed.history.eval_val_loss[2]
    assert resumed.history.eval_val_loss == uninterrupted.history.eval_val_loss
    for (name, a), b in zip(
        uninterrupted.model.state_dict().items(), resumed.model.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name


def test_weights_and_tokenizer_round_trip(tmp_path):
    seed_everything(1)
    model = GPT(MODEL_CONFIG).eval()
    path = save_checkpoint(tmp_path / "sub" / "weights.pt", model, TOKENIZER, meta={"corpus": "x"})
    loaded = load_checkpoint(path)
    assert loaded.tokenizer == TOKENIZER
    assert loaded.model_config == MODEL_CONFIG
    assert loaded.trainer_state is None and loaded.meta == {"corpus": "x"}
    rebuilt = loaded.build_model()
    idx = TOKENIZER.encode("Shall I compare")[None]
    assert torch.equal(model(idx)[0], rebuilt(idx)[0])
    explicit = GPT(GPTConfig(**{**MODEL_CONFIG.to_dict(), "attn_impl": "explicit"}))
    loaded.load_into(explicit)  # the attention path may differ: same weights
    torch.testing.assert_close(explicit.eval()(idx)[0], model(idx)[0], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="holds weights only"):
        loaded.resume(rebuilt, TRAIN_IDS, VAL_IDS)


def test_a_checkpoint_never_holds_more_than_plain_data(tmp_path):
    trainer = fresh_trainer()
    trainer.run(max_steps=2, progress=False)
    path = save_checkpoint(tmp_path / "run.pt", trainer.model, TOKENIZER, trainer)
    payload = torch.load(path, weights_only=True)  # would raise for any other object
    assert set(payload) == {
        "format",
        "version",
        "model_config",
        "tokenizer",
        "model",
        "trainer",
        "meta",
    }


def test_mismatched_config_is_named_field_by_field(tmp_path):
    path = save_checkpoint(tmp_path / "w.pt", GPT(MODEL_CONFIG), TOKENIZER)
    other = GPT(GPTConfig(**{**MODEL_CONFIG.to_dict(), "d_model": 64, "n_layers": 3}))
    with pytest.raises(
        ValueError, match=r"d_model: checkpoint 32 vs model 64, n_layers: checkpoint 2 vs model 3"
    ):
        load_checkpoint(path).load_into(other)


def test_saving_the_wrong_tokenizer_is_refused(tmp_path):
    with pytest.raises(ValueError, match="tokenizer has 3 characters but the model expects"):
        save_checkpoint(tmp_path / "w.pt", GPT(MODEL_CONFIG), CharTokenizer("abc"))


def test_a_failed_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    path = tmp_path / "w.pt"
    save_checkpoint(path, GPT(MODEL_CONFIG), TOKENIZER, meta={"version": "old"})
    before = path.read_bytes()

    def crash_halfway(obj, f):
        with open(f, "wb") as handle:
            handle.write(before[: len(before) // 2])
        raise OSError("No space left on device")

    monkeypatch.setattr(checkpoint_module.torch, "save", crash_halfway)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(path, GPT(MODEL_CONFIG), TOKENIZER, meta={"version": "new"})
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["w.pt"]  # the temporary file is gone
    assert load_checkpoint(path).meta == {"version": "old"}


def test_truncated_file_is_explained(tmp_path):
    path = save_checkpoint(tmp_path / "w.pt", GPT(MODEL_CONFIG), TOKENIZER)
    data = path.read_bytes()
    for cut in (0, 100, len(data) // 2, len(data) - 10):
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError, match="truncated or corrupt"):
            load_checkpoint(path)


class _Payload:
    """An object whose unpickling runs code: what a malicious checkpoint would contain."""

    def __reduce__(self):
        return (exec, ("import builtins; builtins.GPTLIB_PWNED = True",))


def test_unsafe_pickle_is_refused_without_running_it(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"format": "gptlib-checkpoint", "model": _Payload()}, path)
    with pytest.raises(ValueError, match="Python objects other than tensors.*arbitrary code"):
        load_checkpoint(path)
    assert not hasattr(builtins, "GPTLIB_PWNED")


def test_foreign_and_missing_files_are_explained(tmp_path):
    torch.save({"weights": torch.ones(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a gptlib checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    torch.save({"format": "gptlib-checkpoint", "version": 99}, tmp_path / "future.pt")
    with pytest.raises(ValueError, match="format version 99"):
        load_checkpoint(tmp_path / "future.pt")
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "missing.pt")
