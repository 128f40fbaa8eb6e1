"""Write tiny DistilBERT and ELECTRA folders and their reference outputs (run by hand).

keras_bert reads DistilBERT and ELECTRA discriminator folders in Hugging Face
layout (`keras_bert.checkpoints.bert_family`) without importing torch or
transformers. This script, run once in a SEPARATE environment that has them,
makes the ground truth: tiny models with random weights, saved by
transformers' own `save_pretrained`, and their outputs computed by
transformers itself. Its output is committed under tests/fixtures/family/.

  tests/fixtures/family/KIND/
    config.json, model.safetensors   save_pretrained of the model below
    tokenizer.json, tokenizer_config.json, (vocab.txt)
                                     the tokenizer's save_pretrained (uncased)
    expected.npz                     reference outputs (below)

KIND                   class                                notes
distilbert             DistilBertForMaskedLM                dim 32, hidden_dim 64, 2 layers,
                                                            4 heads (the class
                                                            distilbert-base-uncased is saved
                                                            as: an MLM head)
electra                ElectraForPreTraining                the discriminator: embedding_size
                                                            16, hidden 32 (so
                                                            embeddings_project is there),
                                                            2 layers, 4 heads
distilbert_classifier  DistilBertForSequenceClassification  as distilbert; id2label
                                                            negative/neutral/positive
electra_classifier     ElectraForSequenceClassification     as electra; the same labels

Both have a 100-token WordPiece vocabulary (the one of make_tf_h5_fixtures.py)
and 32 positions.

expected.npz (plain arrays, no pickles):
  token_ids, segment_ids, padding_mask  int32 [3, 12]: fixed ids with padding
                                        (DistilBERT takes no segment ids: they
                                        are there for keras_bert's input dict)
  sequence_output                       float32 [3, 12, 32]: the backbone's
                                        last_hidden_state (model.distilbert /
                                        model.electra)
  mlm_logits                            (distilbert) float32 [3, 12, 100]
  logits                                (*_classifier) float32 [3, 3]
  text_logits                           (*_classifier) float32 [3, 3]: on the texts
  text, text_b                          str [3]: raw texts ("" = no text_b)
  text_token_ids, text_segment_ids, text_padding_mask
                                        int32: the texts through the model's own
                                        tokenizer (padded to the longest)
  text_sequence_output                  float32: the backbone on those
  versions                              str: torch, transformers versions

Weights are drawn at scales where a misplaced or untransposed one changes
every output (transformers' initializer_range of 0.02 would leave the outputs
near constant).

Environment used (Python 3.11, CPU, 2026-12-02):

    python3.11 -m venv /work/refvenv-family
    /work/refvenv-family/bin/pip install torch==2.13.0+cpu transformers==5.24.0 \\
        safetensors numpy          # the CPU wheel of torch is 192 MB
    /work/refvenv-family/bin/python tools/make_family_fixtures.py \\
        --output tests/fixtures/family
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402
from make_tf_h5_fixtures import TEXTS, VOCAB, fixed_inputs  # noqa: E402

SEED = 39
HIDDEN, EMBEDDING, LAYERS, HEADS, INTERMEDIATE, MAX_POSITIONS = 32, 16, 2, 4, 64, 32
KINDS = ("distilbert", "electra", "distilbert_classifier", "electra_classifier")
LABELS = ["negative", "neutral", "positive"]


def build_parser():
    parser = _cli.parser(__doc__, doc_epilog=False)
    parser.add_argument("--output", default="tests/fixtures/family",
                        help="Folder to write one sub-folder per kind into.")
    return parser


def randomize(model, generator):
    """Draws every weight at a scale where a misplaced one shows (see module doc)."""
    import torch

    with torch.no_grad():
        for name, parameter in model.named_parameters():
            shape = tuple(parameter.shape)
            norm = "LayerNorm" in name or "layer_norm" in name
            if norm and name.endswith("weight"):
                value = 1.0 + 0.2 * torch.randn(shape, generator=generator)
            elif "embeddings" in name and name.endswith("weight"):
                value = torch.randn(shape, generator=generator)
            elif name.endswith("bias"):
                value = 0.1 * torch.randn(shape, generator=generator)
            else:
                value = 0.2 * torch.randn(shape, generator=generator)
            parameter.copy_(value)


def make_model(kind):
    import transformers

    labels = ({"id2label": dict(enumerate(LABELS)),
               "label2id": {name: i for i, name in enumerate(LABELS)}}
              if kind.endswith("_classifier") else {})
    if kind.startswith("distilbert"):
        config = transformers.DistilBertConfig(
            vocab_size=len(VOCAB), dim=HIDDEN, hidden_dim=INTERMEDIATE, n_layers=LAYERS,
            n_heads=HEADS, max_position_embeddings=MAX_POSITIONS, activation="gelu",
            sinusoidal_pos_embds=False, **labels)
        return (transformers.DistilBertForSequenceClassification(config) if labels
                else transformers.DistilBertForMaskedLM(config))
    config = transformers.ElectraConfig(
        vocab_size=len(VOCAB), embedding_size=EMBEDDING, hidden_size=HIDDEN,
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS, type_vocab_size=2, hidden_act="gelu", **labels)
    return (transformers.ElectraForSequenceClassification(config) if labels
            else transformers.ElectraForPreTraining(config))


def outputs_of(model, kind, token_ids, segment_ids, padding_mask):
    """The backbone's sequence output (and the head's logits), float32 numpy."""
    import numpy as np
    import torch

    inputs = {"input_ids": torch.as_tensor(np.asarray(token_ids), dtype=torch.long),
              "attention_mask": torch.as_tensor(np.asarray(padding_mask), dtype=torch.long)}
    if kind.startswith("electra"):
        inputs["token_type_ids"] = torch.as_tensor(np.asarray(segment_ids), dtype=torch.long)
    backbone = model.distilbert if kind.startswith("distilbert") else model.electra
    with torch.no_grad():
        values = {"sequence_output": backbone(**inputs).last_hidden_state}
        if kind == "distilbert":
            values["mlm_logits"] = model(**inputs).logits
        elif kind.endswith("_classifier"):
            values["logits"] = model(**inputs).logits
    return {k: v.float().numpy() for k, v in values.items()}


def write_fixture(kind, folder):
    import numpy as np
    import torch
    import transformers

    os.makedirs(folder, exist_ok=True)
    vocab_file = os.path.join(folder, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    tokenizer_class = (transformers.DistilBertTokenizer if kind.startswith("distilbert")
                       else transformers.ElectraTokenizer)
    tokenizer = tokenizer_class(vocab_file, do_lower_case=True,
                                model_max_length=MAX_POSITIONS)
    tokenizer.save_pretrained(folder)

    model = make_model(kind)
    randomize(model, torch.Generator().manual_seed(SEED))
    model.eval()
    model.save_pretrained(folder)

    arrays = {}
    token_ids, segment_ids, padding_mask = fixed_inputs(len(VOCAB))
    arrays.update(token_ids=token_ids, segment_ids=segment_ids, padding_mask=padding_mask)
    arrays.update(outputs_of(model, kind, token_ids, segment_ids, padding_mask))

    rows = [tokenizer(text, text_b or None, return_token_type_ids=True)
            for text, text_b in TEXTS]
    width = max(len(row["input_ids"]) for row in rows)

    def pad(key):
        return [list(row[key]) + [0] * (width - len(row[key])) for row in rows]

    text_inputs = (pad("input_ids"), pad("token_type_ids"), pad("attention_mask"))
    arrays.update(text=[t for t, _ in TEXTS], text_b=[b for _, b in TEXTS],
                  text_token_ids=text_inputs[0], text_segment_ids=text_inputs[1],
                  text_padding_mask=text_inputs[2])
    arrays.update({f"text_{k}": v for k, v in outputs_of(model, kind, *text_inputs).items()
                   if k != "mlm_logits"})
    arrays["versions"] = [f"torch {torch.__version__}",
                          f"transformers {transformers.__version__}"]
    np.savez_compressed(
        os.path.join(folder, "expected.npz"),
        **{k: np.asarray(v, np.int32) if k.endswith(("_ids", "_mask")) else np.asarray(v)
           for k, v in arrays.items()})
    return sorted(os.listdir(folder))


def main(argv=None):
    args = build_parser().parse_args(argv)
    for kind in KINDS:
        files = write_fixture(kind, os.path.join(args.output, kind))
        print(f"{kind}: {', '.join(files)}")


if __name__ == "__main__":
    main()
