"""Write the TF Hub SavedModel and Model Garden TF2 checkpoint fixtures (run by hand).

keras_bert reads TF Hub / Kaggle BERT SavedModels and Model Garden's TF2
object-based checkpoints (`keras_bert.checkpoints.tf_hub`, `.model_garden`)
with `tf.train.load_checkpoint` only; it never imports tensorflow_hub, tf_keras or
Model Garden. The fixtures are made by the real thing, in a SEPARATE
environment, and committed under tests/fixtures/tfhub/:

    python3 -m venv /work/refvenv-tfhub
    # TensorFlow itself may come from another venv through a .pth file.
    /work/refvenv-tfhub/bin/pip install tensorflow==2.21.* tensorflow-text==2.21.*
    /work/refvenv-tfhub/bin/pip install --no-deps tf-keras==2.21.0 \
        tf-models-official==2.20.0 gin-config scipy tensorflow-hub==0.16.1
    /work/refvenv-tfhub/bin/python tools/make_tfhub_fixtures.py

Every model is a tiny BERT (hidden 32, 2 layers, 4 heads, intermediate 64,
32 positions, a 60-token vocabulary) with random weights, built by Model
Garden's own classes, so the variable layout is the published one:

  encoder/         export_tfhub_lib.export_model: what tfhub.dev/tensorflow/
                   bert_en_uncased_L-12_H-768_A-12/4 and the small BERTs are
                   (saved_model.pb, variables/, assets/vocab.txt, the
                   do_lower_case variable; signature inputs input_word_ids,
                   input_mask, input_type_ids; outputs sequence_output,
                   pooled_output, encoder_outputs, default)
  preprocess/      export_tfhub_lib.export_preprocessing (bert_en_uncased_
                   preprocess/3: BertTokenizer + BertPackInputs, seq_length 16)
  keras_layer_classifier/
                   a user's tf_keras model: hub.KerasLayer(encoder/) on the
                   pooled output -> Dropout -> Dense(3), model.save()
  keras_layer_mlp/ the same with an unusual head (Dense(16, relu) -> Dense(3))
  tf2_encoder/     tf.train.Checkpoint(encoder=BertEncoder).save ->
                   bert_model.ckpt (the TF2 releases), bert_config.json, vocab.txt
  tf2_pretrainer/  BertPretrainerV2 (BertEncoderV2 from the experiment
                   config, masked_lm head) saved with its checkpoint_items,
                   params.yaml (the experiment's params), vocab.txt
  tf2_classifier/  BertClassifier(num_classes=3) saved as
                   tf.train.Checkpoint(model=classifier), bert_config.json, vocab.txt
  tf2_encoder_v2/  tf.train.Checkpoint(encoder=BertEncoderV2): the subclassed
                   encoder, whose variables are named under "bert_encoder_v2/"
  tf2_pretrainer_v1/ the legacy BertPretrainer (masked LM + NSP on the pooled
                   output) saved as tf.train.Checkpoint(model=pretrainer)

expected.npz in each (plain arrays):
  token_ids, segment_ids, padding_mask   int32 [3, 12] fixed ids with padding
  sequence_output, pooled_output         float32: the source's own runtime on them
                                         (a SavedModel's serving_default signature
                                         loaded with tf.saved_model.load; for TF2
                                         checkpoints, Model Garden's Keras 2 model)
  logits                                 (classifiers) float32 [3, 3]
  mlm_logits                             (pretrainers) float32 [3, 12, vocab]
  nsp_logits                             (tf2_pretrainer_v1) float32 [3, 2]
  text, text_b, text_*                   (encoder) raw texts, the preprocess
                                         SavedModel's ids for them and the
                                         encoder's outputs on those ids
  versions                               str
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402

OUT = os.path.join("tests", "fixtures", "tfhub")
WORDS = ("the quick brown fox jumps over lazy dog what a great movie i love this film "
         "where is train station it two blocks north of here hello ! . , ? is was").split()
TEXTS = ["The quick brown fox jumps over the lazy dog.", "Where is the train station?",
         "Hello!"]
TEXTS_B = ["", "It is two blocks north of here.", ""]
CONFIG = dict(vocab_size=None, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=64, hidden_act="gelu", max_position_embeddings=32,
              type_vocab_size=2, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
              initializer_range=0.02)


def _load():
    """Imports Model Garden and tensorflow_hub (the separate venv of the module docstring)."""
    global config_definitions, configs, encoders, export_tfhub_lib, hub, hyperparams, json
    global models, networks, np, rng, shutil, tempfile, tf, tf_keras, tf_utils
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    import json
    import shutil
    import tempfile

    import numpy as np
    import tensorflow as tf
    import tensorflow_hub as hub
    import tf_keras
    from official.core import config_definitions
    from official.legacy.bert import configs
    from official.modeling import hyperparams, tf_utils
    from official.nlp.configs import encoders
    from official.nlp.modeling import models, networks
    from official.nlp.tools import export_tfhub_lib

    rng = np.random.default_rng(39)


def write_vocab(path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS))
    tokens += [f"##{s}" for s in ("s", "ing", "ed", "ly")]
    tokens += [f"[unused{i}]" for i in range(60 - len(tokens))]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return len(tokens)


def fixed_ids(vocab_size):
    ids = rng.integers(5, vocab_size, size=(3, 12)).astype(np.int32)
    mask = np.ones((3, 12), np.int32)
    mask[1, 9:] = 0
    mask[2, 5:] = 0
    ids[:, 0] = 2
    ids[mask == 0] = 0
    segments = np.zeros((3, 12), np.int32)
    segments[1, 5:9] = 1
    return ids, segments, mask


def randomize(model):
    """Weights at scales that make a misplaced or transposed one show."""
    for v in model.weights:
        scale = 0.3 if "gamma" not in v.name else 0.2
        value = rng.normal(0.0, scale, v.shape).astype(np.float32)
        if "gamma" in v.name:
            value += 1.0
        v.assign(value)


def encoder_inputs(ids, segments, mask):
    return {"input_word_ids": tf.constant(ids), "input_type_ids": tf.constant(segments),
            "input_mask": tf.constant(mask)}


def save_npz(folder, **arrays):
    arrays["versions"] = np.array(
        [f"tensorflow {tf.__version__}", f"tf_keras {tf_keras.__version__}",
         "tf-models-official 2.20.0", f"tensorflow_hub {hub.__version__}"])
    np.savez(os.path.join(folder, "expected.npz"), **arrays)


def fresh(name):
    path = os.path.join(OUT, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def make_tf2_encoder(vocab_file, vocab_size, ids, segments, mask):
    """A legacy BertEncoder (the TF2 releases), as export_tfhub builds it."""
    folder = fresh("tf2_encoder")
    bert_config = configs.BertConfig(**{**CONFIG, "vocab_size": vocab_size})
    encoder = export_tfhub_lib.get_bert_encoder(bert_config)
    randomize(encoder)
    tf.train.Checkpoint(encoder=encoder).write(os.path.join(folder, "bert_model.ckpt"))
    with open(os.path.join(folder, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(bert_config.to_dict(), f, indent=2)
    shutil.copy(vocab_file, os.path.join(folder, "vocab.txt"))
    out = encoder(encoder_inputs(ids, segments, mask), training=False)
    save_npz(folder, token_ids=ids, segment_ids=segments, padding_mask=mask,
             sequence_output=out["sequence_output"].numpy(),
             pooled_output=out["pooled_output"].numpy())
    return bert_config, encoder


def make_tfhub(bert_config, encoder, vocab_file, ids, segments, mask):
    """export_tfhub_lib.export_model and export_preprocessing, as tfhub.dev's BERTs."""
    work = tempfile.mkdtemp()
    checkpoint = tf.train.Checkpoint(encoder=encoder).save(os.path.join(work, "ckpt"))
    folder = os.path.join(OUT, "encoder")
    shutil.rmtree(folder, ignore_errors=True)
    export_tfhub_lib.export_model(folder, bert_config=bert_config,
                                  model_checkpoint_path=checkpoint, with_mlm=False,
                                  vocab_file=vocab_file, do_lower_case=True)
    pre = os.path.join(OUT, "preprocess")
    shutil.rmtree(pre, ignore_errors=True)
    export_tfhub_lib.export_preprocessing(pre, vocab_file=vocab_file, do_lower_case=True,
                                          default_seq_length=16, tokenize_with_offsets=False)
    # The source's own runtime: the SavedModels as TF 2.21 loads them.
    loaded = tf.saved_model.load(folder)
    # hub.KerasLayer calls the restored __call__, whose outputs are the dict
    # tfhub.dev documents (serving_default names them by output layer).
    out = loaded(encoder_inputs(ids, segments, mask), training=False)
    preprocess = tf.saved_model.load(pre)
    singles = preprocess(tf.constant(TEXTS))
    tokenized = [preprocess.tokenize(tf.constant(t)) for t in (TEXTS, TEXTS_B)]
    pairs = preprocess.bert_pack_inputs(tokenized, seq_length=tf.constant(16))
    text_out = loaded(singles, training=False)
    pair_out = loaded(pairs, training=False)
    save_npz(folder, token_ids=ids, segment_ids=segments, padding_mask=mask,
             sequence_output=out["sequence_output"].numpy(),
             pooled_output=out["pooled_output"].numpy(),
             encoder_outputs_0=out["encoder_outputs"][0].numpy(),
             text=np.array(TEXTS), text_b=np.array(TEXTS_B),
             text_token_ids=singles["input_word_ids"].numpy(),
             text_padding_mask=singles["input_mask"].numpy(),
             text_sequence_output=text_out["sequence_output"].numpy(),
             text_pooled_output=text_out["pooled_output"].numpy(),
             pair_token_ids=pairs["input_word_ids"].numpy(),
             pair_segment_ids=pairs["input_type_ids"].numpy(),
             pair_padding_mask=pairs["input_mask"].numpy(),
             pair_pooled_output=pair_out["pooled_output"].numpy())
    shutil.rmtree(work)
    return folder


def make_keras_layer_model(name, encoder_dir, head, ids, segments, mask):
    """A user's model: hub.KerasLayer(encoder) -> head, saved with model.save()."""
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    inputs = {k: tf_keras.Input((None,), dtype=tf.int32, name=k)
              for k in ("input_word_ids", "input_mask", "input_type_ids")}
    outputs = hub.KerasLayer(encoder_dir, trainable=True, name="bert_encoder")(inputs)
    x = tf_keras.layers.Dropout(0.1)(outputs["pooled_output"])
    for layer in head:
        x = layer(x)
    model = tf_keras.Model(inputs, x)
    for layer in head:
        for v in layer.weights:
            v.assign(rng.normal(0.0, 0.5, v.shape).astype(np.float32))
    model.save(folder, include_optimizer=False)
    loaded = tf.saved_model.load(folder)
    logits = loaded(encoder_inputs(ids, segments, mask), training=False)
    save_npz(folder, token_ids=ids, segment_ids=segments, padding_mask=mask,
             logits=logits.numpy())


def make_tf2_pretrainer(vocab_file, vocab_size, ids, segments, mask):
    """BertPretrainerV2 on a BertEncoderV2 built from the experiment config."""
    folder = fresh("tf2_pretrainer")
    encoder_config = encoders.EncoderConfig(type="bert", bert=encoders.BertEncoderConfig(
        vocab_size=vocab_size, hidden_size=32, num_layers=2, num_attention_heads=4,
        intermediate_size=64, hidden_activation="gelu", max_position_embeddings=32,
        type_vocab_size=2, dropout_rate=0.1, attention_dropout_rate=0.1))
    encoder = encoders.build_encoder(encoder_config)
    pretrainer = models.BertPretrainerV2(encoder_network=encoder,
                                         mlm_activation=tf_utils.get_activation("gelu"))
    positions = np.tile(np.arange(12, dtype=np.int32), (3, 1))
    inputs = {**encoder_inputs(ids, segments, mask), "masked_lm_positions": positions}
    pretrainer(inputs)
    randomize(pretrainer)
    tf.train.Checkpoint(**pretrainer.checkpoint_items).write(
        os.path.join(folder, "bert_model.ckpt"))
    params = config_definitions.ExperimentConfig(
        task=hyperparams.Config({"model": {"encoder": encoder_config.as_dict()}}))
    hyperparams.save_params_dict_to_yaml(params, os.path.join(folder, "params.yaml"))
    shutil.copy(vocab_file, os.path.join(folder, "vocab.txt"))
    out = pretrainer(inputs, training=False)
    save_npz(folder, token_ids=ids, segment_ids=segments, padding_mask=mask,
             sequence_output=out["sequence_output"].numpy(),
             pooled_output=out["pooled_output"].numpy(),
             mlm_logits=out["mlm_logits"].numpy())


def make_tf2_classifier(vocab_file, vocab_size, ids, segments, mask):
    """Model Garden's BertClassifier, fine-tuned and saved with Checkpoint(model=)."""
    folder = fresh("tf2_classifier")
    bert_config = configs.BertConfig(**{**CONFIG, "vocab_size": vocab_size})
    encoder = export_tfhub_lib.get_bert_encoder(bert_config)
    classifier = models.BertClassifier(encoder, num_classes=3)
    classifier(encoder_inputs(ids, segments, mask))
    randomize(classifier)
    tf.train.Checkpoint(model=classifier).write(os.path.join(folder, "bert_model.ckpt"))
    with open(os.path.join(folder, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(bert_config.to_dict(), f, indent=2)
    shutil.copy(vocab_file, os.path.join(folder, "vocab.txt"))
    out = encoder(encoder_inputs(ids, segments, mask), training=False)
    logits = classifier(encoder_inputs(ids, segments, mask), training=False)
    save_npz(folder, token_ids=ids, segment_ids=segments, padding_mask=mask,
             sequence_output=out["sequence_output"].numpy(),
             pooled_output=out["pooled_output"].numpy(), logits=logits.numpy())


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--output", default=OUT,
                        help="Folder to write one subfolder per fixture into.")
    return parser


def make_tf2_encoder_v2(vocab_file, vocab_size, ids, segments, mask):
    """BertEncoderV2 (a subclassed layer: other object paths, names under its scope)."""
    folder = fresh("tf2_encoder_v2")
    bert_config = configs.BertConfig(**{**CONFIG, "vocab_size": vocab_size})
    encoder = networks.BertEncoderV2(
        vocab_size=vocab_size, hidden_size=32, num_layers=2, num_attention_heads=4,
        inner_dim=64, inner_activation=tf_utils.get_activation("gelu"),
        max_sequence_length=32, type_vocab_size=2)
    encoder(encoder_inputs(ids, segments, mask))
    randomize(encoder)
    tf.train.Checkpoint(encoder=encoder).write(os.path.join(folder, "bert_model.ckpt"))
    with open(os.path.join(folder, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(bert_config.to_dict(), f, indent=2)
    shutil.copy(vocab_file, os.path.join(folder, "vocab.txt"))
    out = encoder(encoder_inputs(ids, segments, mask), training=False)
    save_npz(folder, token_ids=ids, segment_ids=segments, padding_mask=mask,
             sequence_output=out["sequence_output"].numpy(),
             pooled_output=out["pooled_output"].numpy())


def make_tf2_pretrainer_v1(vocab_file, vocab_size, ids, segments, mask):
    """The legacy BertPretrainer (masked LM + NSP), as official/legacy/bert trains it."""
    folder = fresh("tf2_pretrainer_v1")
    bert_config = configs.BertConfig(**{**CONFIG, "vocab_size": vocab_size})
    # The legacy pretrainer takes the encoder's list outputs [sequence, pooled].
    encoder = networks.BertEncoder(
        vocab_size=vocab_size, hidden_size=32, num_layers=2, num_attention_heads=4,
        intermediate_size=64, activation=tf_utils.get_activation("gelu"),
        max_sequence_length=32, type_vocab_size=2, dict_outputs=False)
    pretrainer = models.BertPretrainer(encoder, num_classes=2, num_token_predictions=12,
                                       activation=tf_utils.get_activation("gelu"))
    positions = np.tile(np.arange(12, dtype=np.int32), (3, 1))
    inputs = [ids, mask, segments, positions]
    pretrainer(inputs)
    randomize(pretrainer)
    tf.train.Checkpoint(model=pretrainer).write(os.path.join(folder, "bert_model.ckpt"))
    with open(os.path.join(folder, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(bert_config.to_dict(), f, indent=2)
    shutil.copy(vocab_file, os.path.join(folder, "vocab.txt"))
    sequence_output, pooled_output = encoder([ids, mask, segments], training=False)
    heads = pretrainer(inputs, training=False)
    save_npz(folder, token_ids=ids, segment_ids=segments, padding_mask=mask,
             sequence_output=sequence_output.numpy(), pooled_output=pooled_output.numpy(),
             mlm_logits=heads["masked_lm"].numpy(), nsp_logits=heads["classification"].numpy())


def main(argv=None):
    global OUT
    args = build_parser().parse_args(argv)
    OUT = args.output
    try:
        _load()
    except ImportError as e:
        print(f"error: this script needs tf-models-official, tf_keras and tensorflow_hub "
              f"(a separate venv; see --help): {e}", file=sys.stderr)
        return 1
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp()
    vocab_file = os.path.join(work, "vocab.txt")
    vocab_size = write_vocab(vocab_file)
    ids, segments, mask = fixed_ids(vocab_size)
    bert_config, encoder = make_tf2_encoder(vocab_file, vocab_size, ids, segments, mask)
    encoder_dir = make_tfhub(bert_config, encoder, vocab_file, ids, segments, mask)
    make_keras_layer_model("keras_layer_classifier", encoder_dir,
                           [tf_keras.layers.Dense(3, name="classifier")], ids, segments, mask)
    make_keras_layer_model("keras_layer_mlp", encoder_dir,
                           [tf_keras.layers.Dense(16, activation="relu", name="hidden"),
                            tf_keras.layers.Dense(3, name="classifier")], ids, segments, mask)
    make_tf2_pretrainer(vocab_file, vocab_size, ids, segments, mask)
    make_tf2_classifier(vocab_file, vocab_size, ids, segments, mask)
    make_tf2_encoder_v2(vocab_file, vocab_size, ids, segments, mask)
    make_tf2_pretrainer_v1(vocab_file, vocab_size, ids, segments, mask)
    shutil.rmtree(work)
    print("wrote", os.path.abspath(OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
