"""Checkpoints: exact resume, atomic writes, one plain dict, and one clear error for unsafe,
foreign or cut files."""

import builtins
import fractions
import os
import pickle
import random
import re
import stat
import zipfile

import pytest
import torch

import gptlib.checkpoint as checkpoint_module
from gptlib import GPT, GPTConfig, seed_everything
from gptlib.checkpoint import load_checkpoint, save_checkpoint
from gptlib.data import SONNETS, CharTokenizer, train_val_split
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
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
    written_out = build_gpt(MODEL_CONFIG, Variant(attention="written-out"))
    loaded.load_into(written_out)  # a lesson variant with every parameter: the same weights
    torch.testing.assert_close(written_out.eval()(idx)[0], model(idx)[0], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="holds weights only"):
        loaded.resume(rebuilt, TRAIN_IDS, VAL_IDS)


def test_a_checkpoint_never_holds_more_than_plain_data(tmp_path):
    trainer = fresh_trainer()
    trainer.run(max_steps=2, progress=False)
    path = save_checkpoint(tmp_path / "run.pt", trainer.model, TOKENIZER, trainer)
    payload = torch.load(path, weights_only=True)  # would raise for any other object
    assert set(payload) == {"model_config", "tokenizer", "model", "trainer", "meta"}
    assert all(isinstance(v, torch.Tensor) for v in payload["model"].values())


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


def not_a_checkpoint(path, what: str) -> str:
    """The start of the error for `path`, as a regular expression."""
    return re.escape(f"{path} is not a gptlib checkpoint that can be loaded: it is {what}")


def test_truncated_file_is_explained(tmp_path):
    path = save_checkpoint(tmp_path / "w.pt", GPT(MODEL_CONFIG), TOKENIZER)
    data = path.read_bytes()
    for cut in (100, len(data) // 2, len(data) - 10):
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=not_a_checkpoint(path, "not a complete torch file")):
            load_checkpoint(path)
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=not_a_checkpoint(path, "an empty file")):
        load_checkpoint(path)


class _Payload:
    """An object whose unpickling runs code: what a malicious checkpoint would contain."""

    def __reduce__(self):
        return (exec, ("import builtins; builtins.GPTLIB_PWNED = True",))


class _System:
    """Unpickling it would call os.system (posix.system or nt.system) to write a file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"echo pwned > {self.marker}",))


class _Eval:
    """Unpickling it would call eval; at pickle protocol 0 the file is printable text."""

    def __reduce__(self):
        return (eval, ("__import__('builtins').__setattr__('GPTLIB_PWNED', True)",))


def holding_code(path, name: str) -> str:
    """The error for a file whose pickle names `name` (a regular expression)."""
    return not_a_checkpoint(path, "a file holding code that a safe load refuses to run") + (
        rf" \(it names {name}\)"
    )


def test_unsafe_pickle_is_refused_without_running_it(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"model": _Payload()}, path)
    with pytest.raises(ValueError, match=holding_code(path, r"(builtins\.)?exec")):
        load_checkpoint(path)
    assert not hasattr(builtins, "GPTLIB_PWNED")


def test_a_pickle_calling_os_system_is_named_as_code_refused(tmp_path):
    path, marker = tmp_path / "system.pt", tmp_path / "pwned.txt"
    torch.save({"model": _System(marker)}, path)
    with pytest.raises(ValueError, match=holding_code(path, r"(posix|nt|os)\.system")) as info:
        load_checkpoint(path)
    assert str(info.value).endswith("use another copy, or train again")
    assert not marker.exists()


def test_a_protocol_0_pickle_of_eval_is_code_not_a_text_file(tmp_path):
    path = tmp_path / "eval.pkl"
    path.write_bytes(pickle.dumps(_Eval(), protocol=0))
    assert all(c.isprintable() or c == "\n" for c in path.read_text())  # it reads as text
    with pytest.raises(ValueError, match=holding_code(path, r"(builtins\.|__builtin__\.)?eval")):
        load_checkpoint(path)
    assert not hasattr(builtins, "GPTLIB_PWNED")


@pytest.mark.parametrize(
    "message",
    [
        "Unsupported global: GLOBAL posix.system was not an allowed global by default.",
        "Trying to load unsupported GLOBAL posix.system whose module posix is blocked.",
    ],
)
def test_a_refused_global_is_named_whatever_torchs_casing(tmp_path, monkeypatch, message):
    path = tmp_path / "refused.pt"
    path.write_bytes(bytes(range(256)))

    def refuse(*args, **kwargs):
        raise pickle.UnpicklingError(f"Weights only load failed.\n\n{message}\n\nSee the docs.")

    monkeypatch.setattr(checkpoint_module.torch, "load", refuse)
    with pytest.raises(ValueError, match=holding_code(path, r"posix\.system")):
        load_checkpoint(path)


def test_an_unsafe_class_is_named_in_full(tmp_path):
    path = tmp_path / "fraction.pt"
    torch.save({"model": fractions.Fraction(1, 3)}, path)
    with pytest.raises(ValueError, match=holding_code(path, r"fractions\.Fraction")):
        load_checkpoint(path)


@pytest.mark.parametrize(
    ("key", "value", "what"),
    [
        ("model", "notadict", "'model' is 'notadict' (type str), not a dict of tensors"),
        ("model", {"tok_emb.weight": [1.0]}, "'model' is a dict with keys 'tok_emb.weight', not"),
        ("trainer", 3, "'trainer' is 3 (type int), not a dict or None"),
        ("meta", ["corpus"], "'meta' is ['corpus'] (type list), not a dict"),
    ],
)
def test_a_part_of_the_wrong_type_is_named_at_load(tmp_path, key, value, what):
    path = save_checkpoint(tmp_path / "w.pt", GPT(MODEL_CONFIG), TOKENIZER)
    torch.save({**torch.load(path, weights_only=True), key: value}, path)
    with pytest.raises(ValueError, match=not_a_checkpoint(path, f"a checkpoint whose {what}")):
        load_checkpoint(path)


def test_files_that_are_not_checkpoints_are_named_for_what_they_are(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("Shopping list:\n- flour\n- eggs\n", encoding="utf-8")
    noise = tmp_path / "noise.bin"
    noise.write_bytes(bytes([0xC5, 0xD7, 0x14, 0x84]) + random.Random(0).randbytes(4092))
    empty = tmp_path / "empty.pt"
    empty.touch()
    folder = tmp_path / "runs"
    folder.mkdir()
    tensor = tmp_path / "tensor.pt"
    torch.save(torch.ones(2, 3), tensor)
    legacy = tmp_path / "legacy.pt"  # torch's pre-1.6 format, which torch.load still reads
    torch.save(torch.ones(4), legacy, _use_new_zipfile_serialization=False)
    state_dict = tmp_path / "state_dict.pt"
    torch.save(GPT(MODEL_CONFIG).state_dict(), state_dict)
    pickled = tmp_path / "data.pkl"
    pickled.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("photo.txt", "not a photo")
    without_tokenizer = tmp_path / "cut.pt"
    torch.save({"model_config": {}, "model": {}}, without_tokenizer)
    bad_config = tmp_path / "bad_config.pt"
    payload = torch.load(save_checkpoint(bad_config, GPT(MODEL_CONFIG), TOKENIZER))
    torch.save({**payload, "model_config": {**payload["model_config"], "n_heads": 3}}, bad_config)
    expected = {
        notes: "a text file of 30 bytes starting with 'Shopping list:\\n",
        noise: "not a complete torch file (",
        empty: "an empty file",
        folder: "a directory",
        tensor: "a torch file holding a tensor of shape [2, 3]",
        legacy: "a torch file holding a tensor of shape [4]",
        state_dict: "a torch file holding a dict with keys 'tok_emb.weight', 'pos_emb.weight'",
        pickled: "not a complete torch file (",
        archive: "not a complete torch file (",
        without_tokenizer: "a torch file holding a dict with keys 'model_config', 'model'",
        bad_config: "a checkpoint whose model config or tokenizer cannot be read (d_model=32",
    }
    for path, what in expected.items():
        with pytest.raises(ValueError, match=not_a_checkpoint(path, what)) as info:
            load_checkpoint(path)
        assert str(info.value).endswith("use another copy, or train again")
    with pytest.raises(FileNotFoundError, match="no checkpoint at .*missing.pt"):
        load_checkpoint(tmp_path / "missing.pt")


def test_weights_that_do_not_fit_are_named(tmp_path):
    path = save_checkpoint(tmp_path / "w.pt", GPT(MODEL_CONFIG), TOKENIZER)
    payload = torch.load(path, weights_only=True)
    payload["model"]["head.weight"] = payload["model"].pop("lm_head.weight")  # an older name
    torch.save(payload, path)
    with pytest.raises(
        ValueError,
        match=r"weights do not fit the model: .*Missing key\(s\) in state_dict: \"lm_head.weight\""
        r".*Unexpected key\(s\) in state_dict: \"head.weight\".*use another copy or retrain",
    ):
        load_checkpoint(path).build_model()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_a_checkpoint_gets_the_permissions_the_umask_gives(tmp_path, umask, mode):
    before = os.umask(umask)
    try:
        path = save_checkpoint(tmp_path / "w.pt", GPT(MODEL_CONFIG), TOKENIZER)
    finally:
        os.umask(before)
    assert stat.S_IMODE(path.stat().st_mode) == mode
