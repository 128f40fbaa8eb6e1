"""Write the transformers-TF `tf_model.h5` fixtures and their reference outputs (run by hand).

keras_bert loads the `tf_model.h5` files that transformers' TensorFlow classes
write (`keras_bert.checkpoints.transformers_tf`), but transformers v5 has no
TensorFlow classes and keras_bert never imports transformers. So the fixtures
are made once, by this script, in a SEPARATE environment that still has them,
and committed under tests/fixtures/transformers_tf/. The tests compare
keras_bert's outputs with the stored outputs of the TF models themselves, so
they need neither transformers nor tf_keras.

For each kind it builds a tiny BERT (hidden 32, 2 layers, 4 heads, a 100-token
vocabulary) with random weights, saves it with `save_pretrained` and writes:

  tests/fixtures/transformers_tf/KIND/
    config.json              transformers' config (architectures, id2label)
    tf_model.h5              Keras 2 h5 weights, as save_pretrained writes them
    vocab.txt, tokenizer_config.json, special_tokens_map.json
                             BertTokenizer.save_pretrained (do_lower_case)
    expected.npz             reference outputs of the TF model (below)

KIND                     class                             do_lower_case
model                    TFBertModel                       True
sequence_classification  TFBertForSequenceClassification   True  (id2label neg/neu/pos)
token_classification     TFBertForTokenClassification      False (id2label O/B-PER/...)
question_answering       TFBertForQuestionAnswering        True
pretraining              TFBertForPreTraining              True  (MLM and NSP heads)

expected.npz (plain arrays, no pickles):
  token_ids, segment_ids, padding_mask   int32 [3, 12]: fixed ids with padding
  OUTPUT                                 float32: the model's outputs on them
  text, text_b                           str [3]: raw texts ("" = no text_b)
  text_token_ids, text_segment_ids, text_padding_mask
                                         int32: the texts through the model's own
                                         tokenizer (padded to the longest)
  text_OUTPUT                            float32: the model's outputs on those
  versions                               str: tensorflow, transformers versions
where OUTPUT is sequence_output and pooled_output (model), logits
(sequence_classification, token_classification), start_logits and end_logits
(question_answering), mlm_logits [batch, seq, vocab] and nsp_logits
(pretraining). Weights are drawn at scales large enough that a
misplaced or untransposed weight changes every output (transformers'
initializer_range of 0.02 would leave outputs near constant).

Environment used (Python 3.11.7, CPU, 2026-12-01):

    python3 -m venv /tmp/venv-tftr
    /tmp/venv-tftr/bin/pip install "transformers==4.46.3" "tensorflow-cpu==2.15.1"
    # (numpy 1.26.4, h5py 3.16.0, keras 2.15.0 come with them; TF 2.15 still has
    #  Keras 2 built in, so tf-keras is not needed)
    /tmp/venv-tftr/bin/python tools/make_tf_h5_fixtures.py \\
        --output tests/fixtures/transformers_tf
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402

SEED = 26
HIDDEN, LAYERS, HEADS, INTERMEDIATE, MAX_POSITIONS = 32, 2, 4, 64, 32

# 100 tokens: specials, punctuation, lowercase words, word pieces and a few
# capitalized words (used only when do_lower_case is False).
VOCAB = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] . , ! ? ' - "
    "the a an of to in is it was and not this that what who where when "
    "quick brown fox jumps over lazy dog hello world station train two blocks north here "
    "john mary lives works paris london berlin movie film great good bad awful love hate "
    "day night i you we they my your very so plot actors story ending "
    "##s ##ed ##ing ##ly ##er ##est un ##happy "
    "The A John Mary Paris London Berlin Hello World Where Who What I "
    "question answer city river bank old new"
).split()

LABELS = {
    "sequence_classification": ["negative", "neutral", "positive"],
    "token_classification": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
}
# (class name, do_lower_case, output names) per kind.
KINDS = {
    "model": ("TFBertModel", True, ("sequence_output", "pooled_output")),
    "sequence_classification": ("TFBertForSequenceClassification", True, ("logits",)),
    "token_classification": ("TFBertForTokenClassification", False, ("logits",)),
    "question_answering": ("TFBertForQuestionAnswering", True,
                           ("start_logits", "end_logits")),
    "pretraining": ("TFBertForPreTraining", True, ("mlm_logits", "nsp_logits")),
}
# Raw texts; question answering reads (question, context) pairs.
TEXTS = [
    ("The quick brown fox jumps over the lazy dog.", ""),
    ("What a great movie, I love this film!", ""),
    ("John lives in Paris.", "Mary works in London."),
]
QA_TEXTS = [
    ("Where does John live?", "John lives in Paris, the old city."),
    ("Who works in London?", "Mary works in London and John in Berlin."),
    ("What is north?", "The station is two blocks north of here."),
]


def fixed_inputs(vocab_size):
    """Three rows of 12 ids: a single text, a pair, and a short padded one."""
    token_ids = [
        [2, 11, 29, 30, 31, 32, 33, 11, 34, 35, 5, 3],
        [2, 18, 12, 38, 39, 8, 3, 11, 36, 37, 40, 3],
        [2, 50, 21, 41, 3, 0, 0, 0, 0, 0, 0, 0],
    ]
    segment_ids = [[0] * 12, [0] * 7 + [1] * 5, [0] * 12]
    padding_mask = [[1] * 12, [1] * 12, [1] * 5 + [0] * 7]
    assert max(max(row) for row in token_ids) < vocab_size
    return token_ids, segment_ids, padding_mask


def randomize(model, rng):
    """Draws every weight at a scale where a misplaced one shows (see module doc)."""
    for variable in model.weights:
        name, shape = variable.name, tuple(variable.shape)
        if name.endswith("gamma:0"):
            value = 1.0 + rng.normal(0.0, 0.2, shape)
        elif "embeddings" in name:
            value = rng.normal(0.0, 1.0, shape)
        elif name.endswith("bias:0") or name.endswith("beta:0"):
            value = rng.normal(0.0, 0.1, shape)
        else:
            value = rng.normal(0.0, 0.3, shape)
        variable.assign(value.astype("float32"))


def outputs_of(model, kind, token_ids, segment_ids, padding_mask):
    import numpy as np

    result = model(input_ids=np.asarray(token_ids, np.int32),
                   token_type_ids=np.asarray(segment_ids, np.int32),
                   attention_mask=np.asarray(padding_mask, np.int32), training=False)
    if kind == "model":
        values = {"sequence_output": result.last_hidden_state,
                  "pooled_output": result.pooler_output}
    elif kind == "question_answering":
        values = {"start_logits": result.start_logits, "end_logits": result.end_logits}
    elif kind == "pretraining":
        values = {"mlm_logits": result.prediction_logits,
                  "nsp_logits": result.seq_relationship_logits}
    else:
        values = {"logits": result.logits}
    return {k: np.asarray(v, np.float32) for k, v in values.items()}


def write_fixture(kind, folder):
    import numpy as np
    import tensorflow as tf
    import transformers

    class_name, lowercase, _ = KINDS[kind]
    os.makedirs(folder, exist_ok=True)
    vocab_file = os.path.join(folder, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    tokenizer = transformers.BertTokenizer(vocab_file, do_lower_case=lowercase,
                                           model_max_length=MAX_POSITIONS)
    tokenizer.save_pretrained(folder)

    labels = LABELS.get(kind)
    config = transformers.BertConfig(
        vocab_size=len(VOCAB), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS, type_vocab_size=2, hidden_act="gelu",
        **({"id2label": dict(enumerate(labels)),
            "label2id": {name: i for i, name in enumerate(labels)}} if labels else {}))
    tf.random.set_seed(SEED)
    model = getattr(transformers, class_name)(config)
    model(model.dummy_inputs, training=False)  # Creates the weights.
    randomize(model, np.random.default_rng(SEED))
    model.save_pretrained(folder)

    arrays = {}
    token_ids, segment_ids, padding_mask = fixed_inputs(len(VOCAB))
    arrays.update(token_ids=token_ids, segment_ids=segment_ids, padding_mask=padding_mask)
    arrays.update(outputs_of(model, kind, token_ids, segment_ids, padding_mask))

    texts = QA_TEXTS if kind == "question_answering" else TEXTS
    # One call per kind of row so single texts get no second segment.
    rows = []
    for text, text_b in texts:
        rows.append(tokenizer(text, text_b or None, return_token_type_ids=True))
    width = max(len(row["input_ids"]) for row in rows)

    def pad(key):
        return [row[key] + [0] * (width - len(row[key])) for row in rows]

    text_inputs = (pad("input_ids"), pad("token_type_ids"), pad("attention_mask"))
    arrays.update(text=[t for t, _ in texts], text_b=[b for _, b in texts],
                  text_token_ids=text_inputs[0], text_segment_ids=text_inputs[1],
                  text_padding_mask=text_inputs[2])
    arrays.update({f"text_{k}": v for k, v in outputs_of(model, kind, *text_inputs).items()})
    arrays["versions"] = [f"tensorflow {tf.__version__}",
                          f"transformers {transformers.__version__}"]
    np.savez_compressed(
        os.path.join(folder, "expected.npz"),
        **{k: np.asarray(v, np.int32) if k.endswith(("_ids", "_mask")) else np.asarray(v)
           for k, v in arrays.items()})
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        architectures = json.load(f)["architectures"]
    size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
    print(f"{folder}: {class_name} (architectures {architectures}), {size // 1024} KB")


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--output", default=os.path.join("tests", "fixtures", "transformers_tf"),
                        help="Folder to write one subfolder per kind into.")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"Comma-separated kinds to write, of {list(KINDS)}.")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        import transformers

        transformers.TFBertModel  # noqa: B018 -- fails where TF classes are gone.
    except (ImportError, AttributeError) as e:
        print(f"error: this script needs transformers with its TensorFlow classes "
              f"(transformers<4.50 with tensorflow<2.16; see --help): {e}", file=sys.stderr)
        return 1
    for kind in args.kinds.split(","):
        if kind not in KINDS:
            print(f"error: unknown kind {kind!r}; expected one of {list(KINDS)}",
                  file=sys.stderr)
            return 1
        write_fixture(kind, os.path.join(args.output, kind))
    return 0


if __name__ == "__main__":
    sys.exit(main())
