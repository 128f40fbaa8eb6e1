"""Convert a BERT checkpoint (Google, Hugging Face, transformers-TF, keras-hub, TF Hub,
Model Garden) into a keras_bert model directory.

Input formats
-------------
google       Google's original release (google-research/bert), a folder with
               bert_config.json
               bert_model.ckpt.index, bert_model.ckpt.data-00000-of-00001
               vocab.txt
             e.g. uncased_L-12_H-768_A-12/. --input may also be the checkpoint
             prefix (.../bert_model.ckpt) with the config and vocab beside it.
             Google's hidden_act "gelu" is the tanh approximation and becomes
             hidden_act "gelu_approx". Optimizer slots (adam_m, adam_v) and
             global_step are skipped.
huggingface  A transformers BERT folder (BertModel, BertForPreTraining,
             BertForMaskedLM, ...) with
               config.json
               model.safetensors  (read with numpy; or pytorch_model.bin,
                                   which needs `pip install torch`)
               vocab.txt
             Tensor names with or without the "bert." prefix. Hugging Face's
             "gelu" is exact (erf); "gelu_new"/"gelu_pytorch_tanh" become
             "gelu_approx".
transformers_tf
             A folder written by transformers' TensorFlow save_pretrained
             (TFBertModel, TFBertForPreTraining, TFBertForSequenceClassification,
             TFBertForTokenClassification, TFBertForQuestionAnswering) with
               config.json
               tf_model.h5        (Keras 2 h5 weights, read with h5py; neither
                                   transformers nor tf_keras is needed)
               vocab.txt
             --input may also be the tf_model.h5 inside it. A folder that also
             has model.safetensors or pytorch_model.bin is read as huggingface.
keras_hub    A keras-hub preset folder (save_to_preset, or a Kaggle download)
               config.json        (BertBackbone; other backbones are refused)
               model.weights.h5, tokenizer.json, assets/tokenizer/vocabulary.txt
               preprocessor.json  (optional: its sequence_length is kept)
               task.json, task.weights.h5  (a BertTextClassifier: head kept)
             keras-hub's BertBackbone GELU is the tanh approximation
             ("gelu_approx"); --check compares with keras-hub itself when it
             is installed, else with numpy.
tf_hub       A TF Hub / Kaggle BERT encoder SavedModel (saved_model.pb,
             variables/, assets/vocab.txt; e.g. bert_en_uncased_L-12_H-768_A-12/4),
             or a folder holding it and its preprocess SavedModel
             (bert_en_uncased_preprocess/3; vocabulary, casing and length read
             from it), or a user's SavedModel with a hub.KerasLayer BERT and a
             Dense head. Read with tf.train.load_checkpoint (no tensorflow_hub).
model_garden A Model Garden TF2 object-based checkpoint (tf.train.Checkpoint of
             BertEncoder, BertPretrainerV2 or BertClassifier) with
             bert_config.json or the experiment's params.yaml, and vocab.txt.

The format is detected from the files unless --format is given.

--input may also be a Hugging Face Hub id (google-bert/bert-base-uncased) or a
well-known name (bert-base-uncased, all-MiniLM-L6-v2, keras-hub's
bert_base_en_uncased, ...: keras_bert.checkpoints.KNOWN_NAMES), read from
huggingface_hub's cache and downloaded when missing (never with HF_HUB_OFFLINE=1).
A fine-tuned BertForSequenceClassification / BertForTokenClassification /
BertForQuestionAnswering (PyTorch or TF) keeps its head and id2label names.
The casing (do_lower_case, Google's uncased_/cased_ folder name) goes into
task.json.

Output
------
MODEL_DIR/config.json, vocab.txt, model.weights.h5: a BertPretrainer's weights
when the source has the MLM / NSP heads (cls/... tensors), else a
BertEncoder's. Heads the source lacks are reported, not invented. Every source
tensor is loaded or listed (skipped on purpose / unused). MODEL_DIR appears
only when conversion (and --check) succeeded.

Load the result with BertEncoder.from_pretrained(MODEL_DIR), or a task model:
BertClassifier.from_pretrained(MODEL_DIR, num_classes=3).

Examples
--------
  python tools/convert_checkpoint.py --input uncased_L-12_H-768_A-12 \\
      --output models/bert_base_uncased --check
  python tools/convert_checkpoint.py --input all-MiniLM-L6-v2 \\
      --output models/minilm --format huggingface --check
  python tools/convert_checkpoint.py --input my_tf_sentiment_model \\
      --output models/sentiment --check      # save_pretrained of a TFBertFor...
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402

# keras_bert.checkpoints.FORMATS and convert.DEFAULT_TOLERANCE (tests/test_tools.py checks).
FORMATS = ("google", "huggingface", "transformers_tf", "keras_hub", "tf_hub", "model_garden")
DEFAULT_TOLERANCE = 1e-3


def build_parser():
    parser = _cli.parser(__doc__, doc_epilog=False)
    parser.add_argument("--input", required=True,
                        help="Checkpoint folder, prefix or weights file, Hugging Face Hub id "
                        "or known name (bert-base-uncased).")
    parser.add_argument("--output", required=True, help="Model directory to create.")
    parser.add_argument(
        "--format", choices=FORMATS, default=None, help="Input format (default: detect)."
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="Reload the written model and compare it on a few sentences with an "
        "independent forward pass of the source (transformers when importable "
        "for Hugging Face input, else numpy); print max |diff|; fail above "
        "--tolerance.",
    )
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help="Largest max |diff| --check accepts.")
    parser.add_argument(
        "--overwrite", action="store_true",
        help="Replace --output if it is a model directory keras_bert wrote (else refused)."
    )
    _cli.add_verbose(parser)
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from keras_bert.checkpoints import CheckpointError, convert_checkpoint

    try:
        report = convert_checkpoint(
            args.input,
            args.output,
            format=args.format,
            check=args.check,
            tolerance=args.tolerance,
            overwrite=args.overwrite,
            log=lambda message: print(message, flush=True),
        )
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
