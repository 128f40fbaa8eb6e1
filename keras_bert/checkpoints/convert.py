"""Convert a checkpoint of any supported format into a model directory.

    source = read_checkpoint("uncased_L-12_H-768_A-12")        # any format
    model, report = build_model(source)                         # Keras model, weights set
    report = convert_checkpoint(SRC, "models/bert_base", check=True)

The readers give weights under Google's names; this module puts them into a
`BertEncoder` (and `BertPretrainer` heads, or a fine-tuned task head), writes
the model directory, and checks it against an independent forward pass
(`reference.py`).
"""

import dataclasses
import inspect
import logging
import os

import numpy as np

from keras_bert import sources, storage
from keras_bert.checkpoints import reference
from keras_bert.checkpoints.google import read_google_checkpoint
from keras_bert.checkpoints.hub import locate_checkpoint
from keras_bert.checkpoints.huggingface import WEIGHTS_FILES, read_huggingface_checkpoint
from keras_bert.checkpoints.keras_hub_preset import read_keras_hub_preset
from keras_bert.checkpoints.model_garden import is_object_checkpoint, read_model_garden_checkpoint
from keras_bert.checkpoints.source import (
    MLM_WEIGHTS,
    NSP_WEIGHTS,
    POOLER_WEIGHTS,
    CheckpointError,
    ConversionReport,
)
from keras_bert.checkpoints.tf_hub import is_saved_model, read_tf_hub_saved_model, split_pair
from keras_bert.checkpoints.transformers_tf import (
    TF_WEIGHTS_FILE,
    TF_WEIGHTS_INDEX,
    read_transformers_tf_checkpoint,
)
from keras_bert.files import prepare_output_dir, staged_dir
from keras_bert.models import BertEncoder, BertPretrainer, get_task
from keras_bert.models import model_dir as model_dir_lib
from keras_bert.models.model_dir import MODEL_DIR_KIND

_READERS = {
    "google": read_google_checkpoint,
    "huggingface": read_huggingface_checkpoint,
    "transformers_tf": read_transformers_tf_checkpoint,
    "keras_hub": read_keras_hub_preset,
    "tf_hub": read_tf_hub_saved_model,
    "model_garden": read_model_garden_checkpoint,
}
FORMATS = tuple(_READERS)
logger = logging.getLogger(__name__)

# Sentences the numeric check runs: a single sentence, a pair, and a short one
# so the batch has padding.
CHECK_SENTENCES = (
    ("The quick brown fox jumps over the lazy dog.", None),
    ("Where is the train station?", "It is two blocks north of here."),
    ("Hello!", None),
)
DEFAULT_TOLERANCE = 1e-3


def detect_format(path):
    """One of `FORMATS`, from the files at `path` (a Hugging Face folder with both
    PyTorch weights and tf_model.h5 is "huggingface")."""
    if os.path.isfile(path + ".index") or path.endswith((".index", ".ckpt")):
        prefix = path[:-len(".index")] if path.endswith(".index") else path
        return "model_garden" if is_object_checkpoint(prefix) else "google"
    if os.path.isfile(path) and path.endswith(".h5"):
        return "transformers_tf"
    if os.path.isfile(path) and path.endswith((".safetensors", ".bin", ".index.json")):
        return "huggingface"
    if os.path.isdir(path):
        files = set(os.listdir(path))
        if "saved_model.pb" in files:
            return "tf_hub"
        indexes = sorted(f for f in files if f.endswith(".index"))
        if indexes and any(is_object_checkpoint(os.path.join(path, f[:-len(".index")]))
                           for f in indexes):
            return "model_garden"
        if "bert_config.json" in files or indexes:
            return "google"
        if "config.json" in files:
            # A keras-hub preset's config.json is a serialized Keras object.
            if sources.keras_hub_class(path):
                return "keras_hub"
            if files & {TF_WEIGHTS_FILE, TF_WEIGHTS_INDEX} and not files & set(WEIGHTS_FILES):
                return "transformers_tf"
            return "huggingface"
        if is_saved_model(path):  # A TF Hub encoder and its preprocess model, as subfolders.
            return "tf_hub"
        raise CheckpointError(
            f"Cannot tell the format of {path}: it has neither bert_config.json "
            f"(Google), config.json (Hugging Face), saved_model.pb (TF Hub) nor a TF "
            f"checkpoint (*.index). Found: {sorted(files)[:8]}. Pass format= / --format."
        )
    raise CheckpointError(f"Checkpoint not found: {path}")


def read_checkpoint(path, format=None):
    """Reads a checkpoint into a `SourceCheckpoint`.

    Args:
        path: a checkpoint folder, prefix or weights file.
        format: one of `FORMATS`, or None to detect it from the files.
    """
    format = format or detect_format(path)
    if format not in _READERS:
        raise CheckpointError(f"Unknown checkpoint format: {format!r}. Expected one of {FORMATS}.")
    return _READERS[format](path)


def _weight_map(model, source):
    """(Keras variable, value in Keras layout, source name(s)) for every weight.

    Only parts whose weights are in `source` are listed.
    """
    w, name = source.weights, source.source_name
    encoder = getattr(model, "encoder", model)
    emb = encoder.embeddings
    pairs = [
        (emb.token_embeddings, "bert/embeddings/word_embeddings"),
        (emb.position_embeddings, "bert/embeddings/position_embeddings"),
        (emb.layer_norm.gamma, "bert/embeddings/LayerNorm/gamma"),
        (emb.layer_norm.beta, "bert/embeddings/LayerNorm/beta"),
    ]
    if emb.segment_embeddings is not None:  # None in DistilBERT.
        pairs.append((emb.segment_embeddings, "bert/embeddings/token_type_embeddings"))
    fused = []  # (variable, value, description)

    def dense(layer, prefix):
        pairs.extend([(layer.kernel, prefix + "/kernel"), (layer.bias, prefix + "/bias")])

    if encoder.embeddings_project is not None:  # ELECTRA's E -> H.
        dense(encoder.embeddings_project, "bert/embeddings_project")

    def norm(layer, prefix):
        pairs.extend([(layer.gamma, prefix + "/gamma"), (layer.beta, prefix + "/beta")])

    for i, block in enumerate(encoder.encoder_blocks):
        p = f"bert/encoder/layer_{i}/"
        qkv = [p + f"attention/self/{part}" for part in ("query", "key", "value")]
        # Fused projection: kernel [H, 3H] laid out [q | k | v] on the last axis.
        for var, suffix in ((block.qkv_dense.kernel, "/kernel"), (block.qkv_dense.bias, "/bias")):
            names = [n + suffix for n in qkv]
            value = np.concatenate([w[n] for n in names], axis=-1)
            fused.append((var, value, " + ".join(str(name(n)) for n in names)))
        dense(block.attention_output_dense, p + "attention/output/dense")
        norm(block.attention_layer_norm, p + "attention/output/LayerNorm")
        dense(block.intermediate_dense, p + "intermediate/dense")
        dense(block.output_dense, p + "output/dense")
        norm(block.output_layer_norm, p + "output/LayerNorm")

    if encoder.pooler is not None and source.has_part(POOLER_WEIGHTS):
        dense(encoder.pooler.dense, "bert/pooler/dense")
    if hasattr(model, "mlm_head") and source.has_part(MLM_WEIGHTS):
        dense(model.mlm_head.transform_dense, "cls/predictions/transform/dense")
        norm(model.mlm_head.layer_norm, "cls/predictions/transform/LayerNorm")
        pairs.append((model.mlm_head.output_bias, "cls/predictions/output_bias"))
    if hasattr(model, "nsp_head") and source.has_part(NSP_WEIGHTS):
        # Google's output_weights are [2, H]; a Dense kernel is [H, 2].
        kernel = "cls/seq_relationship/output_weights"
        fused.append((model.nsp_head.dense.kernel, w[kernel].T, name(kernel)))
        pairs.append((model.nsp_head.dense.bias, "cls/seq_relationship/output_bias"))
    if source.head is not None and hasattr(model, "output_dense"):  # A fine-tuned head.
        for var, part in ((model.output_dense.kernel, "kernel"), (model.output_dense.bias, "bias")):
            fused.append((var, source.head[part], source.head["source_names"]))
    return [(var, w[n], name(n)) for var, n in pairs] + fused


def assign_weights(model, source):
    """Sets the weights of `model` (a BertEncoder, BertPretrainer or task model) from `source`.

    All shapes are checked before any variable changes.

    Returns:
        list of the model's weights that `source` had no value for (the
        pooler or a head missing in the source), left as initialized.
    """
    mapping = _weight_map(model, source)
    errors = [
        f"{src}: the Keras variable {var.path} has shape {tuple(var.shape)}, "
        f"the source gives {tuple(value.shape)}"
        for var, value, src in mapping
        if tuple(var.shape) != tuple(value.shape)
    ]
    if errors:
        raise CheckpointError("Shape mismatch while loading weights:\n  " + "\n  ".join(errors))
    for var, value, _ in mapping:
        var.assign(value.astype(var.dtype))
    assigned = {id(var) for var, _, _ in mapping}
    return [v for v in model.weights if id(v) not in assigned]


def text_settings(source):
    """The text settings a converted model keeps in task.json, from the source.

    `lowercase` comes from the source, else `build_preprocessor` guesses it
    from vocab.txt with a warning. `max_seq_length` only when the source's
    preprocessor says one (keras-hub's preprocessor.json).

    Args:
        source: SourceCheckpoint.

    Returns:
        dict with "lowercase" (bool) and, when the source says them,
        "max_seq_length" (int) and "tokenizer_options" (its tokenizer's other
        settings, e.g. keras-hub's lower-casing that keeps accents).
    """
    from keras_bert.models.model_dir import build_preprocessor
    from keras_bert.text import TextSettings

    said = "" if source.lowercase is not None else (
        " (no do_lower_case, no uncased_/cased_ folder name)")
    preprocessor = build_preprocessor(
        source.vocab_file, source.config.max_position_embeddings,
        TextSettings(lowercase=source.lowercase), where=f"{source.path}{said}")
    settings = TextSettings(max_seq_length=source.max_seq_length,
                            lowercase=preprocessor.tokenizer.lowercase).to_json()
    options = {k: v for k, v in source.tokenizer_options.items()
               # strip_accents equal to the casing is the default rule.
               if not (k == "strip_accents" and v == settings["lowercase"])}
    if options:
        settings["tokenizer_options"] = options
    return settings


def build_model(source):
    """A Keras model holding the weights of `source`, and a ConversionReport.

    The task model of `source.head` when there is one; else a `BertPretrainer`
    when the source has an MLM or NSP head (the other, if missing, stays freshly
    initialized and the report says so), else a `BertEncoder`.
    """
    report = ConversionReport(
        format=source.format,
        source=source.path,
        config=source.config,
        num_source_tensors=len(source.weights) + len(source.ignored) + len(source.unused),
        ignored=dict(source.ignored),
        unused=list(source.unused),
        warnings=list(source.warnings),
    )
    # An encoder without a pooler (use_pooler=False) has no pooler to miss.
    parts = {"pooler": source.has_part(POOLER_WEIGHTS)} if source.config.use_pooler else {}
    parts.update(mlm_head=source.has_part(MLM_WEIGHTS), nsp_head=source.has_part(NSP_WEIGHTS))
    encoder = BertEncoder(**source.config.to_dict())
    model = encoder
    head = source.head
    if head is not None:
        # A fine-tuned classifier has no MLM/NSP heads to keep.
        parts["mlm_head"] = parts["nsp_head"] = False
        model_class = get_task(head["task"]).model
        labels = {}
        # A span head (BertSpanLabeler) has its 2 units fixed and no labels.
        if "num_classes" in inspect.signature(model_class.__init__).parameters:
            labels = {"num_classes": int(head["bias"].shape[0]),
                      "label_names": head["label_names"]}
        model = model_class(encoder=encoder, **labels, **head.get("options", {}))
        report.label_names = head["label_names"]
    elif parts["mlm_head"] or parts["nsp_head"]:
        model = BertPretrainer(encoder=encoder)
    report.loaded_parts = ["encoder"] + [p for p, present in parts.items() if present]
    report.missing_parts = [p for p, present in parts.items() if not present]

    left = assign_weights(model, source)
    if head is not None:
        report.loaded_parts.append(f"{head['task']}_head")
        if head["label_names"] is None and labels:
            last = head["bias"].shape[0] - 1
            report.warnings.append(
                f"the source's {head['task']} head has no id2label names, so label_names is "
                f"None: predictions and exports name the labels by id, \"0\"..\"{last}\". "
                f"Name them with from_pretrained(..., label_names=[...]).")
    expected_left = []
    if encoder.pooler is not None and not parts["pooler"]:
        expected_left += encoder.pooler.weights
    if isinstance(model, BertPretrainer):
        if not parts["mlm_head"]:
            tied = encoder.embeddings.token_embeddings
            expected_left += [v for v in model.mlm_head.weights if v is not tied]
        if not parts["nsp_head"]:
            expected_left += model.nsp_head.weights
    unexpected = {id(v) for v in left} - {id(v) for v in expected_left}
    if unexpected:
        # The model has a weight the converter doesn't know: a layout change in
        # keras_bert.layers that this module must follow.
        names = [v.path for v in left if id(v) in unexpected]
        raise CheckpointError(f"No source weight maps to the Keras variable(s) {names}.")
    for part in report.missing_parts:
        # A token or span head reads no pooled output (transformers saves none for them).
        if part == "pooler" and getattr(model, "uses_pooler", True):
            report.warnings.append(
                "the source has no pooler (bert/pooler/dense); pooled_output comes "
                "from a freshly initialized pooler: fine-tune before using it."
            )
        elif isinstance(model, BertPretrainer):
            report.warnings.append(
                f"the source has no {part}; BertPretrainer's {part} is freshly "
                f"initialized."
            )
    for warning in report.warnings:
        logger.warning(warning)
    if report.unused:
        logger.warning("source tensors not used by BERT: %s", ", ".join(report.unused))
    return model, report


def check_inputs(vocab_file, lowercase=None, sentences=CHECK_SENTENCES):
    """A padded batch of `sentences` (pairs allowed), made by a `BertPreprocessor`.

    Args:
        vocab_file: str, the checkpoint's vocab.txt.
        lowercase: bool, or None to guess it from the vocabulary (with a warning).
        sentences: tuple of (text, text_b or None).

    Returns:
        dict of int32 numpy arrays [batch, seq]: token_ids, segment_ids,
        padding_mask.
    """
    import tensorflow as tf

    from keras_bert.models.model_dir import build_preprocessor

    try:
        preprocessor = build_preprocessor(vocab_file, None, None, lowercase=lowercase,
                                          where=vocab_file)
    except ValueError as e:
        raise CheckpointError(f"{vocab_file}: {e}") from e
    # The preprocessor takes a batch of single texts or a batch of pairs: pack
    # each kind, then pad both to one width, in the order of `sentences`.
    rows = [None] * len(sentences)
    for pairs in (False, True):
        index = [i for i, (_, b) in enumerate(sentences) if (b is not None) == pairs]
        if not index:
            continue
        columns = [tf.constant([sentences[i][0] for i in index])]
        if pairs:
            columns.append(tf.constant([sentences[i][1] for i in index]))
        packed = {k: v.numpy() for k, v in preprocessor(tuple(columns)).items()}
        for row, i in enumerate(index):
            rows[i] = {k: v[row] for k, v in packed.items()}
    seq = max(len(row["token_ids"]) for row in rows)
    return {
        k: np.stack([np.pad(row[k], (0, seq - len(row[k])),
                            constant_values=preprocessor.tokenizer.pad_token_id if k == "token_ids" else 0)
                     for row in rows]).astype(np.int32)
        for k in ("token_ids", "segment_ids", "padding_mask")
    }


def model_outputs(model, inputs):
    """Numpy outputs of a converted model on `inputs`, MLM logits at every position."""
    encoder = getattr(model, "encoder", model)
    out = encoder(inputs, training=False)
    outputs = {k: np.asarray(out[k]) for k in ("sequence_output", "pooled_output")}
    if hasattr(model, "mlm_head"):
        batch, seq = inputs["token_ids"].shape
        positions = np.tile(np.arange(seq, dtype=np.int32), (batch, 1))
        head = model({**inputs, "masked_positions": positions}, training=False)
        outputs.update({k: np.asarray(head[k]) for k in ("mlm_logits", "nsp_logits")})
    return outputs


def check_model(model, source, inputs=None, tolerance=DEFAULT_TOLERANCE, report=None):
    """Compares `model` with an independent forward pass of `source`.

    The reference is transformers (Hugging Face folders), keras-hub (presets)
    or the SavedModel itself (TF Hub) when importable, else and for the other
    heads `reference.numpy_forward`. Padding positions are not compared.

    Args:
        model: the converted BertEncoder or BertPretrainer.
        source: the SourceCheckpoint it was converted from.
        inputs: encoder input dict; default `check_inputs(source.vocab_file)`.
        tolerance: float, largest max |diff| accepted for hidden states; for
            logits, `tolerance * max(1, max |reference logit|)`.
        report: optional ConversionReport to fill in (max_abs_diff, reference).

    Returns:
        dict, output name -> max |diff|.

    Raises:
        CheckpointError: when a difference exceeds the tolerance.
    """
    if inputs is None:
        inputs = check_inputs(source.vocab_file, source.lowercase)
    ids = (inputs["token_ids"], inputs["segment_ids"], inputs["padding_mask"])
    ref = reference.numpy_forward(source.weights, source.config, *ids)
    used = "numpy"
    folder = source.path if os.path.isdir(source.path) else os.path.dirname(source.path)
    if source.format == "huggingface" and reference.transformers_available():
        encoder_ref = reference.transformers_forward(folder, *ids)
        # transformers' pooled output is the encoder's own pooler: a missing one is freshly
        # initialized there, and one read from a head's dense (RoBERTa's classifier.dense)
        # is not what it runs, so numpy alone checks those.
        if not str(source.source_name("bert/pooler/dense/kernel")).endswith(
                "pooler.dense.weight"):
            encoder_ref.pop("pooled_output", None)
        ref.update(encoder_ref)
        used = "transformers (encoder), numpy (heads)"
    elif source.format == "tf_hub":
        encoder_folder, _ = split_pair(source.path)
        saved = reference.saved_model_forward(encoder_folder, *ids)
        if "head_logits" not in saved or source.head is not None:
            ref.update(saved)  # An unusual head's outputs were left out with it.
            used = "the SavedModel (tf.saved_model.load)"
    elif source.format == "keras_hub" and reference.keras_hub_available():
        ref.update(reference.keras_hub_forward(source.path, *ids))
        used = "keras-hub"
    out = model_outputs(model, inputs)
    if source.head is not None and hasattr(model, "output_dense"):
        # The head is a Linear on the pooled (sequence) output, as in transformers.
        feature = "pooled_output" if source.head["task"] == "classification" else (
            "sequence_output")
        if feature in ref and "head_logits" not in ref:
            ref["head_logits"] = ref[feature] @ source.head["kernel"] + source.head["bias"]
        if "head_logits" in ref:
            logits = model(inputs, training=False)
            if isinstance(logits, dict):  # A span head: [batch, seq, 2] as start, end.
                logits = np.stack([logits["start_logits"], logits["end_logits"]], axis=-1)
            out["head_logits"] = np.asarray(logits)
    real = inputs["padding_mask"].astype(bool)
    diffs, failures = {}, []
    for key in ("sequence_output", "pooled_output", "mlm_logits", "nsp_logits",
                "head_logits"):
        if key not in ref or key not in out:
            continue
        got, want = out[key], ref[key]
        if key in ("sequence_output", "mlm_logits") or got.ndim == 3:
            got, want = got[real], want[real]
        diff = float(np.max(np.abs(got.astype(np.float64) - want)))
        diffs[key] = diff
        limit = tolerance
        if key.endswith("logits"):
            limit *= max(1.0, float(np.max(np.abs(want))))
        if not diff <= limit:
            failures.append(f"{key}: max |diff| {diff:.3g} > {limit:.3g}")
    if report is not None:
        report.max_abs_diff = diffs
        report.reference = used
    if failures:
        raise CheckpointError(
            f"The converted model does not match {source.path} (reference: {used}): "
            + "; ".join(failures) + ". " + _mismatch_cause(model, source, inputs, out, ref, used)
        )
    return diffs


# The other GELU of each: Google's "gelu" is the tanh approximation
# (keras_bert's gelu_approx), Hugging Face's "gelu" the exact one.
_OTHER_GELU = {"gelu": "gelu_approx", "gelu_approx": "gelu"}


def _mismatch_cause(model, source, inputs, out, ref, used):
    """A sentence naming what made `check_model` fail, as far as it can be told
    (hidden_act when an outside reference matches the other GELU)."""
    for key, values in out.items():
        if not np.isfinite(values).all():
            bad = [v.path for v in model.weights
                   if np.issubdtype(np.dtype(v.dtype), np.floating)
                   and not np.isfinite(np.asarray(v)).all()]
            where = f"the weight(s) {', '.join(bad[:3])} hold NaN or inf" if bad else (
                "its weights are finite, so a value overflowed (float16?)")
            return f"The converted {key} holds NaN or inf: {where}."
    for key, values in ref.items():
        if not np.isfinite(values).all():
            return f"The reference's {key} holds NaN or inf: the source's weights overflow."
    other = _OTHER_GELU.get(source.config.hidden_act)
    if other is not None and used != "numpy" and "sequence_output" in ref:
        # Does the other GELU explain the difference? Then the config's
        # hidden_act is the wrong one for these weights' reference.
        config = dataclasses.replace(source.config, hidden_act=other)
        alt = reference.numpy_forward(source.weights, config, inputs["token_ids"],
                                      inputs["segment_ids"], inputs["padding_mask"])
        real = inputs["padding_mask"].astype(bool)
        now = np.max(np.abs(ref["sequence_output"][real] - out["sequence_output"][real]))
        then = np.max(np.abs(ref["sequence_output"][real] - alt["sequence_output"][real]))
        if then < now / 10:
            return (f"The reference matches hidden_act={other!r}, not the config's "
                    f"{source.config.hidden_act!r}: set hidden_act in the config (Google 'gelu' "
                    "is the tanh approximation, Hugging Face 'gelu' is exact).")
    return ("No single cause was found: a weight may be misplaced or transposed by the "
            "reader, or the reference reads the source differently.")


def convert_checkpoint(
    input_path,
    output_dir,
    format=None,
    check=False,
    tolerance=DEFAULT_TOLERANCE,
    overwrite=False,
    log=None,
):
    """Converts a checkpoint into a keras_bert model directory.

    Writes config.json, vocab.txt and model.weights.h5 (the model of
    `build_model`) to a staging folder renamed into place only after
    conversion (and the check, if asked) succeeded. `output_dir` must be new,
    empty, or (with `overwrite`) a model directory keras_bert wrote, and must
    not hold the input.

    Args:
        input_path: the checkpoint (see `read_checkpoint`), or a Hugging Face
            Hub id or known name (see `keras_bert.checkpoints.hub`).
        output_dir: the model directory to create.
        format: one of `FORMATS`, or None to detect.
        check: bool, reload the written directory and compare its outputs
            with an independent forward pass of the source (`check_model`).
        tolerance: float, see `check_model`.
        overwrite: bool, replace `output_dir` if it is a model directory.
        log: optional function taking one str (e.g. print) for progress.

    Returns:
        ConversionReport.

    Example:
    >>> report = convert_checkpoint("uncased_L-12_H-768_A-12", "models/bert_base")
    >>> print(report.summary())
    """
    log = log or (lambda message: None)
    if storage.is_remote(input_path):
        raise CheckpointError(
            f"The checkpoint {os.fspath(input_path)} is remote: checkpoints are read from local "
            f"paths only (the output may be remote). Copy it to a local folder first (e.g. "
            f"gcloud storage cp -r {os.fspath(input_path)} ckpt/) and convert that.")
    input_path = locate_checkpoint(input_path)
    output_dir = storage.abspath(output_dir)  # "gs://b/x" kept as given.
    try:
        # Refuses a file, a folder of something else and one holding the
        # input; an earlier model directory needs `overwrite`.
        target = prepare_output_dir(output_dir, MODEL_DIR_KIND, overwrite=overwrite,
                                    inputs=[input_path],
                                    overwrite_flag="overwrite=True (--overwrite)")
    except FileExistsError as e:
        raise CheckpointError(str(e)) from e
    log(f"Reading {input_path}")
    source = read_checkpoint(input_path, format)
    log(f"Read {len(source.weights)} weights ({source.format}); building the Keras model")
    model, report = build_model(source)
    report.text_settings = text_settings(source)

    with staged_dir(target, prefix=model_dir_lib.CONVERT_STAGING_PREFIX) as staged:
        log(f"Writing {type(model).__name__} weights")
        model_dir_lib.save_model_dir(model, staged, vocab_file=source.vocab_file,
                                     task_info=report.text_settings)
        if check:
            log("Checking the written model against the source")
            reloaded = model_dir_lib.load_model_dir(staged, BertEncoder)
            inputs = check_inputs(source.vocab_file, report.text_settings["lowercase"])
            check_model(reloaded, source, inputs=inputs, tolerance=tolerance, report=report)
    report.output = output_dir
    return report

