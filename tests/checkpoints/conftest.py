"""Tiny BERT checkpoints in Google's and Hugging Face's formats, written here.

Both are made from one dict of random weights in Google's names and layout
(`tiny_weights`), the ground truth every test compares with. The Hugging Face
files are written with names and [out, in] layouts spelled out below, not with
the library's mapping, so a wrong name or a missing transpose in the reader
shows up as a difference from the ground truth.
"""

import contextlib
import json
import os

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.conftest import tiny_config as root_tiny_config

WORDS = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] the quick brown fox jumps over lazy dog . hello ! "
    "where is train station ? it two blocks north of here ##s a"
).split()


def tiny_config(**overrides):
    """The suite's tiny config (tests/conftest.py) with WORDS as vocabulary and 24 positions."""
    values = dict(vocab_size=len(WORDS), hidden_act="gelu_approx", max_position_embeddings=24,
                  type_vocab_size=2)
    return root_tiny_config(**{**values, **overrides})


def random_weights(config, seed=0, heads=True):
    """Google-named weights; scales large enough that a misplaced one shows."""
    rng = np.random.default_rng(seed)
    h, i, v = config.hidden_size, config.intermediate_size, config.vocab_size

    def normal(*shape, scale=0.3):
        return rng.normal(0.0, scale, shape).astype(np.float32)

    def gamma(n):
        return (1.0 + normal(n, scale=0.2)).astype(np.float32)

    w = {
        "bert/embeddings/word_embeddings": normal(v, h, scale=1.0),
        "bert/embeddings/token_type_embeddings": normal(config.type_vocab_size, h, scale=1.0),
        "bert/embeddings/position_embeddings": normal(config.max_position_embeddings, h, scale=1.0),
        "bert/embeddings/LayerNorm/gamma": gamma(h),
        "bert/embeddings/LayerNorm/beta": normal(h, scale=0.1),
        "bert/pooler/dense/kernel": normal(h, h),
        "bert/pooler/dense/bias": normal(h, scale=0.1),
    }
    for n in range(config.num_layers):
        p = f"bert/encoder/layer_{n}/"
        for name, shape in (
            ("attention/self/query", (h, h)),
            ("attention/self/key", (h, h)),
            ("attention/self/value", (h, h)),
            ("attention/output/dense", (h, h)),
            ("intermediate/dense", (h, i)),
            ("output/dense", (i, h)),
        ):
            w[p + name + "/kernel"] = normal(*shape)
            w[p + name + "/bias"] = normal(shape[1], scale=0.1)
        for name in ("attention/output/LayerNorm", "output/LayerNorm"):
            w[p + name + "/gamma"] = gamma(h)
            w[p + name + "/beta"] = normal(h, scale=0.1)
    if heads:
        w.update(
            {
                "cls/predictions/transform/dense/kernel": normal(h, h),
                "cls/predictions/transform/dense/bias": normal(h, scale=0.1),
                "cls/predictions/transform/LayerNorm/gamma": gamma(h),
                "cls/predictions/transform/LayerNorm/beta": normal(h, scale=0.1),
                "cls/predictions/output_bias": normal(v),
                "cls/seq_relationship/output_weights": normal(2, h),
                "cls/seq_relationship/output_bias": normal(2),
            }
        )
    return w


def write_vocab(path, words=WORDS):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(words) + "\n")


def to_huggingface(weights, config, prefix="bert.", old_layer_norm_names=False):
    """HF tensor names and PyTorch layouts, spelled out (not via the library)."""
    gamma, beta = ("gamma", "beta") if old_layer_norm_names else ("weight", "bias")
    t = {}
    g = weights
    for kind in ("word", "token_type", "position"):
        t[f"{prefix}embeddings.{kind}_embeddings.weight"] = g[f"bert/embeddings/{kind}_embeddings"]
    t[prefix + f"embeddings.LayerNorm.{gamma}"] = g["bert/embeddings/LayerNorm/gamma"]
    t[prefix + f"embeddings.LayerNorm.{beta}"] = g["bert/embeddings/LayerNorm/beta"]
    t[prefix + "embeddings.position_ids"] = np.arange(config.max_position_embeddings)[None]
    for n in range(config.num_layers):
        src, dst = f"bert/encoder/layer_{n}/", f"{prefix}encoder.layer.{n}."
        for a, b in (
            ("attention/self/query", "attention.self.query"),
            ("attention/self/key", "attention.self.key"),
            ("attention/self/value", "attention.self.value"),
            ("attention/output/dense", "attention.output.dense"),
            ("intermediate/dense", "intermediate.dense"),
            ("output/dense", "output.dense"),
        ):
            t[dst + b + ".weight"] = g[src + a + "/kernel"].T.copy()  # [out, in]
            t[dst + b + ".bias"] = g[src + a + "/bias"]
        for a, b in (("attention/output/LayerNorm", "attention.output.LayerNorm"),
                     ("output/LayerNorm", "output.LayerNorm")):
            t[dst + b + f".{gamma}"] = g[src + a + "/gamma"]
            t[dst + b + f".{beta}"] = g[src + a + "/beta"]
    if "bert/pooler/dense/kernel" in g:
        t[prefix + "pooler.dense.weight"] = g["bert/pooler/dense/kernel"].T.copy()
        t[prefix + "pooler.dense.bias"] = g["bert/pooler/dense/bias"]
    if "cls/predictions/output_bias" in g:
        src, dst = "cls/predictions/transform/", "cls.predictions.transform."
        t[dst + "dense.weight"] = g[src + "dense/kernel"].T.copy()
        t[dst + "dense.bias"] = g[src + "dense/bias"]
        t[dst + f"LayerNorm.{gamma}"] = g[src + "LayerNorm/gamma"]
        t[dst + f"LayerNorm.{beta}"] = g[src + "LayerNorm/beta"]
        t["cls.predictions.bias"] = g["cls/predictions/output_bias"]
        t["cls.predictions.decoder.weight"] = g["bert/embeddings/word_embeddings"]
        t["cls.predictions.decoder.bias"] = g["cls/predictions/output_bias"]
    if "cls/seq_relationship/output_weights" in g:
        t["cls.seq_relationship.weight"] = g["cls/seq_relationship/output_weights"]  # [2, H]
        t["cls.seq_relationship.bias"] = g["cls/seq_relationship/output_bias"]
    return t


def huggingface_config(config):
    act = {"gelu": "gelu", "gelu_approx": "gelu_new", "relu": "relu"}[config.hidden_act]
    return {
        "architectures": ["BertForPreTraining"],
        "model_type": "bert",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": act,
        "hidden_dropout_prob": config.dropout_rate,
        "attention_probs_dropout_prob": config.attention_dropout_rate,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.initializer_range,
        "layer_norm_eps": config.layer_norm_epsilon,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    }


def write_huggingface(folder, tensors, config_values, words=WORDS):
    from safetensors.numpy import save_file

    os.makedirs(folder, exist_ok=True)
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
              os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config_values, f)
    write_vocab(os.path.join(folder, "vocab.txt"), words)
    return folder


def hf_folder(tmp_path, heads=False, config_values=None, words=WORDS, tensor_changes=None):
    """tmp_path/hf: a tiny Hugging Face folder (exact gelu, random weights), as changed.

    Args:
        tmp_path: pathlib.Path, the test's folder.
        heads: bool, with the MLM and NSP heads.
        config_values: dict, config.json in place of the config's own.
        words: list of str, vocab.txt.
        tensor_changes: dict, tensor name -> value, replaced or added.

    Returns:
        str, the folder.
    """
    config = tiny_config(hidden_act="gelu")
    tensors = to_huggingface(random_weights(config, heads=heads), config)
    tensors.update(tensor_changes or {})
    return write_huggingface(str(tmp_path / "hf"), tensors,
                             config_values or huggingface_config(config), words)


def assert_convert_fails(tmp_path, source, match, **kwargs):
    """convert_checkpoint(source, ...) raises CheckpointError matching `match`, writing nothing."""
    from keras_bert.checkpoints import CheckpointError, convert_checkpoint

    out = tmp_path / "out" / "model"
    with pytest.raises(CheckpointError, match=match):
        convert_checkpoint(source, str(out), **kwargs)
    assert not out.exists()
    # No staging folders left behind either.
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def google_config(config):
    act = {"gelu_approx": "gelu", "relu": "relu"}[config.hidden_act]
    return {
        "attention_probs_dropout_prob": config.attention_dropout_rate,
        "hidden_act": act,
        "hidden_dropout_prob": config.dropout_rate,
        "hidden_size": config.hidden_size,
        "initializer_range": config.initializer_range,
        "intermediate_size": config.intermediate_size,
        "max_position_embeddings": config.max_position_embeddings,
        "num_attention_heads": config.num_heads,
        "num_hidden_layers": config.num_layers,
        "type_vocab_size": config.type_vocab_size,
        "vocab_size": config.vocab_size,
    }


def write_google(folder, tensors, config_values, words=WORDS):
    """A Google release folder, written with tf.raw_ops.SaveV2 like TF1's Saver."""
    import tensorflow as tf

    os.makedirs(folder, exist_ok=True)
    names = sorted(tensors)
    tf.raw_ops.SaveV2(
        prefix=os.path.join(folder, "bert_model.ckpt"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tensors[n] for n in names],
    )
    with open(os.path.join(folder, "bert_config.json"), "w") as f:
        json.dump(config_values, f)
    write_vocab(os.path.join(folder, "vocab.txt"), words)
    return folder


@pytest.fixture
def batch():
    """A padded batch of 2: row 0 has 3 padded positions, row 1 is a pair."""
    token_ids = np.array(
        [[2, 5, 6, 7, 8, 13, 3, 0, 0, 0], [2, 14, 15, 16, 3, 5, 9, 10, 26, 3]], np.int32
    )
    segment_ids = np.array([[0] * 10, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]], np.int32)
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": (token_ids > 0).astype(np.int32),
    }


def minilm_reference():
    """transformers' BertModel outputs for the real MiniLM-L6 on a mixed batch, with its inputs.

    dict of arrays: token_ids, segment_ids, padding_mask, sequence_output,
    pooled_output (tests/data/checkpoints/minilm_l6_reference.npz, written by
    tests/fixtures/makers/make_reference_outputs.py).
    """
    with np.load(os.path.join(ROOT, "tests", "data", "checkpoints",
                              "minilm_l6_reference.npz")) as data:
        return {k: data[k] for k in data.files}


def reference_inputs(reference):
    """The encoder inputs of `minilm_reference()`."""
    return {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")}


@contextlib.contextmanager
def offline_caches(root):
    """KERAS_BERT_CACHE at `root`/keras_bert_cache; the Hugging Face cache empty and offline."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERAS_BERT_CACHE", str(root / "keras_bert_cache"))
        patch.setenv("HF_HUB_CACHE", str(root / "hf_cache"))
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield root


def stored_fixture(family, kind):
    """(folder, its expected.npz arrays) of tests/fixtures/FAMILY/KIND, a fixture made by hand
    with the source's own runtime (tests/fixtures/makers/make_*_fixtures.py)."""
    folder = os.path.join(ROOT, "tests", "fixtures", family, kind)
    with np.load(os.path.join(folder, "expected.npz")) as data:
        return folder, {k: data[k] for k in data.files}


# === Tiny RoBERTa, XLM-R and BertModel + SentencePiece folders, made by transformers ===

# Special tokens in fairseq's order (<s> <pad> </s> <unk>, so pad_token_id is 1 as in
# RoBERTa and XLM-R), words, then the mask token last. BertTokenizer's names stand in
# for <s> etc. until the SentencePiece / BPE tokenizer files replace this vocab.txt.
# 100 tokens: model_dir's h5 size check (`h5_shapes`) takes the largest array to be at
# most max(vocab, positions, I, H) * max(H, I), which the fused QKV kernel (H x 3H) exceeds
# below vocab_size 3H.
FAMILY_WORDS = ["[CLS]", "[PAD]", "[SEP]", "[UNK]"] + WORDS[5:] + [
    f"w{i}" for i in range(100 - len(WORDS))] + ["[MASK]"]
FAMILY_CLASSES = {"roberta": ("RobertaConfig", "Roberta"),
                  "xlm-roberta": ("XLMRobertaConfig", "XLMRoberta"),
                  "bert": ("BertConfig", "Bert")}


def _randomize(model, seed):
    """Every parameter random at a scale where a misplaced one shows (tied ones stay tied)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator)
            if "norm" in name.lower() and name.endswith("weight"):
                param.copy_(1.0 + 0.2 * noise)
            else:
                param.copy_((1.0 if "embeddings" in name else 0.3) * noise)


def make_family_folder(folder, model_type, head="ForMaskedLM", seed=0, **config):
    """A tiny transformers model saved with save_pretrained (safetensors), random weights.

    The encoder is 2 layers (or `config`'s), 32 wide, 30 usable positions; RoBERTa-type
    configs have the released models' type_vocab_size 1, layer_norm_eps 1e-5 and
    max_position_embeddings = positions + pad_token_id + 1. A head other than the encoder's
    own ("Model") is saved with the encoder's pooler added (as in a pretraining
    checkpoint), so that both `...Model` and `...{head}` load from the folder.

    Args:
        folder: str, created.
        model_type: "roberta", "xlm-roberta" or "bert" (BertModel weights with the
            SentencePiece layout's pad_token_id 1).
        head: transformers class suffix: "Model", "ForMaskedLM",
            "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering".
        seed: int.
        **config: config values that differ.

    Returns:
        str, the folder.
    """
    import torch
    import transformers
    from safetensors.torch import load_file, save_file

    config_class, prefix = FAMILY_CLASSES[model_type]
    roberta = model_type != "bert"
    values = dict(vocab_size=len(FAMILY_WORDS), hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=37, pad_token_id=1,
                  bos_token_id=0, eos_token_id=2, hidden_act="gelu",
                  max_position_embeddings=32 if roberta else 30,
                  type_vocab_size=1 if roberta else 2, layer_norm_eps=1e-5 if roberta else 1e-12,
                  num_labels=3, id2label={0: "neg", 1: "neu", 2: "pos"},
                  label2id={"neg": 0, "neu": 1, "pos": 2})
    if head == "ForQuestionAnswering":  # Start and end logits.
        values.update(num_labels=2, id2label=None, label2id=None)
    values.update(config)
    hf_config = getattr(transformers, config_class)(**values)
    torch.manual_seed(seed)
    model = getattr(transformers, prefix + head)(hf_config)
    _randomize(model, seed)
    model.save_pretrained(folder)
    if head != "Model":
        encoder = getattr(transformers, prefix + "Model")(hf_config)
        _randomize(encoder, seed + 1)
        path = os.path.join(folder, "model.safetensors")
        tensors = load_file(path)
        base = model.base_model_prefix
        tensors.update({f"{base}.{k}": v.contiguous() for k, v in encoder.state_dict().items()
                        if k.startswith("pooler.")})
        save_file(tensors, path, metadata={"format": "pt"})
    write_vocab(os.path.join(folder, "vocab.txt"), FAMILY_WORDS)
    return folder


def family_batch(max_length=30):
    """Encoder inputs of 3 rows: a short padded one, a pair (segment ids 1) and one of
    `max_length` tokens. Real tokens avoid id 1 (RoBERTa counts it as padding)."""
    rng = np.random.default_rng(0)
    lengths = (5, 12, max_length)
    token_ids = np.ones((3, max_length), np.int32)  # <pad>
    segment_ids = np.zeros((3, max_length), np.int32)
    for row, n in enumerate(lengths):
        token_ids[row, :n] = rng.integers(4, len(FAMILY_WORDS), n)
        token_ids[row, 0], token_ids[row, n - 1] = 0, 2
    token_ids[1, 6], segment_ids[1, 7:12] = 2, 1
    padding_mask = (np.arange(max_length)[None] < np.array(lengths)[:, None]).astype(np.int32)
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def transformers_outputs(folder, inputs, head="Model", model_type="roberta"):
    """The float32 outputs of transformers' class `head` of `folder` on `inputs`."""
    import torch
    import transformers

    model = getattr(transformers, FAMILY_CLASSES[model_type][1] + head).from_pretrained(folder)
    model.eval()
    args = {"input_ids": torch.as_tensor(inputs["token_ids"], dtype=torch.long),
            "attention_mask": torch.as_tensor(inputs["padding_mask"], dtype=torch.long)}
    if model_type == "bert":
        args["token_type_ids"] = torch.as_tensor(inputs["segment_ids"], dtype=torch.long)
    with torch.no_grad():
        out = model(**args)
    return {k: v.numpy() for k, v in out.items() if isinstance(v, torch.Tensor)}
