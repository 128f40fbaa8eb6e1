"""Independent BERT forward passes to check a conversion against.

`numpy_forward` is google-research/bert's modeling.py written again in numpy
(float64), on the weights of a `SourceCheckpoint` (Google names and layout):
it shares no code with the Keras layers, so a conversion that agrees with it
has put every weight in the right place. The other forward passes run the
source with transformers, keras-hub or TensorFlow, when importable.
"""

import importlib
import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _activation(name):
    if name == "gelu":  # exact, x * Phi(x)
        return lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name == "gelu_approx":  # Google's modeling.gelu
        return lambda x: 0.5 * x * (
            1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))
        )
    if name == "relu":
        return lambda x: np.maximum(x, 0.0)
    raise ValueError(f"Unknown hidden_act: {name!r}")


def _layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def numpy_forward(weights, config, token_ids, segment_ids, padding_mask):
    """BERT's forward pass in float64 numpy.

    Args:
        weights: dict, Google variable name -> numpy array (Google layout).
        config: BertConfig.
        token_ids, segment_ids, padding_mask: int arrays [batch, seq].

    Returns:
        dict of float64 arrays: `sequence_output` [batch, seq, hidden]; and,
        when their weights are present, `pooled_output` [batch, hidden],
        `mlm_logits` [batch, seq, vocab], `nsp_logits` [batch, 2].
    """
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    eps = config.layer_norm_epsilon
    act = _activation(config.hidden_act)
    batch, seq = token_ids.shape
    heads = config.num_heads
    head_size = config.hidden_size // heads

    x = (
        w["bert/embeddings/word_embeddings"][token_ids]
        + w["bert/embeddings/position_embeddings"][None, :seq]
    )  # (B, T, E); E = H but in ELECTRA
    if getattr(config, "type_vocab_size", 2):  # DistilBERT has no segment table.
        # One segment type (RoBERTa): every token adds it, whatever segment_ids say.
        segments = segment_ids if config.type_vocab_size > 1 else np.zeros_like(segment_ids)
        x = x + w["bert/embeddings/token_type_embeddings"][segments]

    def dense(x, name):
        return x @ w[name + "/kernel"] + w[name + "/bias"]

    def norm(x, name):
        return _layer_norm(x, w[name + "/gamma"], w[name + "/beta"], eps)

    x = norm(x, "bert/embeddings/LayerNorm")
    if "bert/embeddings_project/kernel" in w:  # ELECTRA: E -> H.
        x = dense(x, "bert/embeddings_project")
    # modeling.py's additive mask: 0 for real keys, -10000 for padding.
    mask = (1.0 - np.asarray(padding_mask, np.float64))[:, None, None, :] * -10000.0

    def split(t):  # (B, T, H) -> (B, N, T, D)
        return t.reshape(batch, seq, heads, head_size).transpose(0, 2, 1, 3)

    for i in range(config.num_layers):
        p = f"bert/encoder/layer_{i}/"
        q = split(dense(x, p + "attention/self/query"))
        k = split(dense(x, p + "attention/self/key"))
        v = split(dense(x, p + "attention/self/value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_size) + mask  # (B, N, T, T)
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, -1)  # (B, T, H)
        attention = dense(context, p + "attention/output/dense")
        h = norm(x + attention, p + "attention/output/LayerNorm")
        ffn = dense(act(dense(h, p + "intermediate/dense")), p + "output/dense")
        x = norm(h + ffn, p + "output/LayerNorm")
    outputs = {"sequence_output": x}

    if "bert/pooler/dense/kernel" in w:
        pooler_act = getattr(config, "pooler_act", "tanh")
        pooler = np.tanh if pooler_act == "tanh" else _activation(pooler_act)
        outputs["pooled_output"] = pooler(dense(x[:, 0], "bert/pooler/dense"))
    elif not getattr(config, "use_pooler", True):  # No pooler: the [CLS] vector.
        outputs["pooled_output"] = x[:, 0]
    if "cls/predictions/output_bias" in w:
        t = act(dense(x, "cls/predictions/transform/dense"))
        t = norm(t, "cls/predictions/transform/LayerNorm")
        outputs["mlm_logits"] = (
            t @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
        )
    if "cls/seq_relationship/output_weights" in w and "pooled_output" in outputs:
        outputs["nsp_logits"] = (
            outputs["pooled_output"] @ w["cls/seq_relationship/output_weights"].T
            + w["cls/seq_relationship/output_bias"]
        )
    return outputs


def _importable(*modules):
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError:
        return False
    return True


def transformers_available():
    """True when torch and transformers can be imported."""
    return _importable("torch", "transformers")


def transformers_forward(folder, token_ids, segment_ids, padding_mask):
    """The encoder of a Hugging Face folder (`BertModel`, `RobertaModel`, ...: the class of
    its model_type), run by transformers in float32.

    Whatever the checkpoint's dtype (float16, bfloat16), the model runs in
    float32, as the converted model does (widening the weights is exact).

    Returns:
        dict of float32 numpy arrays: `sequence_output` [batch, seq, hidden]
        and, for BERT and RoBERTa, `pooled_output` [batch, hidden] (DistilBertModel and
        ElectraModel have no pooler).
    """
    import json
    import os

    import torch
    import transformers

    from keras_bert.checkpoints.bert_family import MODEL_CLASSES, ROBERTA_TYPES, model_type_of

    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        model_type = model_type_of(json.load(f))
    model_class = getattr(transformers, MODEL_CLASSES[model_type])
    model = model_class.from_pretrained(folder)
    model = model.float()  # Parameters and buffers in float32, whatever was loaded.
    model.eval()
    inputs = {
        "input_ids": torch.as_tensor(np.asarray(token_ids), dtype=torch.long),
        "attention_mask": torch.as_tensor(np.asarray(padding_mask), dtype=torch.long),
    }
    # DistilBERT takes no segment ids; RoBERTa's one segment type is its default.
    if model_type != "distilbert" and model_type not in ROBERTA_TYPES:
        inputs["token_type_ids"] = torch.as_tensor(np.asarray(segment_ids), dtype=torch.long)
    with torch.no_grad():
        out = model(**inputs)
    outputs = {"sequence_output": out.last_hidden_state.float().numpy()}
    if getattr(out, "pooler_output", None) is not None:
        outputs["pooled_output"] = out.pooler_output.float().numpy()
    return outputs


def keras_hub_available():
    """True when keras_hub can be imported."""
    return _importable("keras_hub")


def keras_hub_forward(preset, token_ids, segment_ids, padding_mask):
    """The preset's backbone (and classifier head) run by keras-hub itself.

    Returns:
        dict of float32 numpy arrays: `sequence_output` [batch, seq, hidden],
        `pooled_output` [batch, hidden] and, when task.json names a text
        classifier, `head_logits` [batch, num_classes].
    """
    import json
    import os

    import keras_hub

    inputs = {"token_ids": np.asarray(token_ids, np.int32),
              "segment_ids": np.asarray(segment_ids, np.int32),
              "padding_mask": np.asarray(padding_mask, np.int32)}
    backbone = keras_hub.models.Backbone.from_preset(preset)
    out = backbone(inputs, training=False)
    outputs = {k: np.asarray(out[k], np.float32) for k in ("sequence_output", "pooled_output")}
    task_file = os.path.join(preset, "task.json")
    if os.path.isfile(task_file):
        with open(task_file, encoding="utf-8") as f:
            task = json.load(f)
        if task.get("class_name") in ("BertTextClassifier", "BertClassifier"):
            classifier = keras_hub.models.TextClassifier.from_preset(preset, preprocessor=None)
            outputs["head_logits"] = np.asarray(classifier(inputs, training=False), np.float32)
    return outputs


def saved_model_forward(folder, token_ids, segment_ids, padding_mask):
    """A TF Hub BERT SavedModel (or a user's model holding one) run by TensorFlow itself.

    The SavedModel is loaded with `tf.saved_model.load` (no tf_keras, no
    tensorflow_hub) and called as hub.KerasLayer calls it: a dict of
    input_word_ids, input_mask, input_type_ids, training=False.

    Returns:
        dict of float32 numpy arrays: `sequence_output` and `pooled_output`
        for an encoder; `head_logits` for a model whose output is one tensor
        (a user's classifier).
    """
    import tensorflow as tf

    loaded = tf.saved_model.load(folder)
    out = loaded({"input_word_ids": tf.constant(token_ids, tf.int32),
                  "input_mask": tf.constant(padding_mask, tf.int32),
                  "input_type_ids": tf.constant(segment_ids, tf.int32)}, training=False)
    if isinstance(out, dict):
        return {k: np.asarray(out[k], np.float32) for k in ("sequence_output", "pooled_output")}
    return {"head_logits": np.asarray(out, np.float32)}
