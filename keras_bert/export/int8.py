"""int8 SavedModel exports: the encoder's Dense layers on oneDNN's u8 x s8 matmul.

`quantize_module(module, texts)` turns every Dense layer inside the encoder
blocks of an export's model (q/k/v, attention output, FFN in and out) into
core TensorFlow's `QuantizedMatMulWithBiasAndDequantize`: int8 weights (one
scale per output column), uint8 activations, float32 out. Embeddings, LayerNorm,
softmax, GELU, the pooler and the head stay float32. The export is core
TensorFlow (plus tensorflow-text's tokenizer): TF Serving loads it as it is.

The op takes uint8 activations in its SCALED mode, so each input x is
shifted to x - lo >= 0 before it is quantized, and the shift comes back
through the bias: (x - lo) W + (b + lo * colsum(W)) = x W + b. `lo`, `hi`
are calibrated on the user's texts (values outside clamped), or taken per call.
"""

import numpy as np
import tensorflow as tf

from keras_bert.layers import TransformerEncoderBlock
from keras_bert.export.serving_kernels import _set
from keras_bert.export.tuning import read_texts

#: The ranges `quantize_module` uses: from calibration texts, or per call.
CALIBRATED, DYNAMIC = "calibrated", "dynamic"


def encoder_dense_layers(model):
    """The Dense layers inside `model`'s encoder blocks, in call order."""
    layers = []
    for block in model._flatten_layers(include_self=True, recursive=True):
        if isinstance(block, TransformerEncoderBlock):
            layers += [block.qkv_dense, block.attention_output_dense,
                       block.intermediate_dense, block.output_dense]
    return layers


def read_calibration_texts(path):
    """The texts of `path`: one a line, or a CSV/TSV file's `text` column."""
    return read_texts(path, "calibration", "give a file of a few hundred texts like those "
                      "you serve, one a line or a CSV with a 'text' column (--calibration-data "
                      "FILE), or leave it out for per-call ranges", table=True)


def calibrate(module, texts, batch_size=32):
    """{Dense layer: (lo, hi)}: the range of each encoder Dense's input over `texts`
    (list of str, run eagerly through `module`); lo <= 0 <= hi keeps zero exact."""
    model = module._keras.model
    ranges = {layer: [0.0, 0.0] for layer in encoder_dense_layers(model)}
    restores = [_set(layer, "call", _recorder(layer, ranges[layer])) for layer in ranges]
    try:
        for start in range(0, len(texts), batch_size):
            inputs = module.preprocess_texts((tf.constant(texts[start:start + batch_size]),))
            model(inputs, training=False)
    finally:
        for restore in reversed(restores):
            restore()
    return {layer: tuple(r) for layer, r in ranges.items()}


def _recorder(layer, seen):
    call = layer.call

    def record(inputs, *args, **kwargs):
        seen[0] = min(seen[0], float(tf.reduce_min(inputs)))
        seen[1] = max(seen[1], float(tf.reduce_max(inputs)))
        return call(inputs, *args, **kwargs)

    return record


def quantize_module(module, texts=None):
    """Makes `module`'s model run its encoder Dense layers in int8 (in place).

    Args:
        module: a float32 `BertServingModule` built for an export (its model
            the export's own copy).
        texts: list of str to calibrate the activation ranges on, or None:
            ranges from each call's input (`DYNAMIC`).

    Returns:
        dict, what keras_bert_export.json records under "int8".
    """
    if module.dtype_policy != "float32":
        raise ValueError(f"quantize='int8' quantizes a float32 model; drop dtype="
                         f"{module.dtype_policy!r} (--dtype) or --quantize.")
    if module.jit_compile:
        raise ValueError("quantize='int8' runs oneDNN's int8 kernels, which XLA does not "
                         "compile; drop jit_compile (--jit-compile on) or --quantize.")
    _check_kernel()
    layers = encoder_dense_layers(module._keras.model)
    if not layers:
        raise ValueError(f"{type(module._keras.model).__name__} has no encoder blocks to "
                         "quantize.")
    ranges = calibrate(module, texts) if texts is not None else dict.fromkeys(layers)
    replaced, added = set(), []
    for layer in layers:
        kernel = _Int8Dense(layer, ranges[layer])
        layer.call = kernel  # the export's own model (see Args)
        replaced.update(v.value.ref() for v in (layer.kernel, layer.bias))
        added += kernel.variables
    # The float kernels the int8 ones replace are no longer read: not saved.
    module.model_variables = [v for v in module.model_variables if v.ref() not in replaced]
    module.int8_variables = added
    return {"ranges": DYNAMIC if texts is None else CALIBRATED,
            **({"calibration_texts": len(texts)} if texts is not None else {}),
            "layers": len(layers),
            "kernel": "QuantizedMatMulWithBiasAndDequantize"}


class _Int8Dense:
    """A Dense layer's `call` on int8 weights: y = activation(x W + b), x [rows, K] float32.

    W ~ Wq * scale per output column (Wq int8 [K, N], scale [N]); the op scales by
    the activation's range alone, so its output is multiplied by the column
    scales and the bias it adds is divided by them beforehand.
    """

    def __init__(self, layer, input_range):
        kernel = np.asarray(layer.kernel.numpy(), np.float32)  # [K, N]
        bias = np.asarray(layer.bias.numpy(), np.float32)  # [N]
        self.layer = layer
        scale = np.maximum(np.abs(kernel).max(axis=0), 1e-12) / 127  # [N]
        quantized = np.clip(np.round(kernel / scale), -127, 127)
        column_sums = quantized.sum(axis=0)  # [N]: 1 . Wq
        self.range = input_range
        if input_range is not None:
            bias = bias + input_range[0] * column_sums * scale  # the shift, back (see module)
        else:
            self.column_sums = tf.Variable(column_sums.astype(np.float32), trainable=False,
                                           name=layer.name + "_int8_column_sums")
        self.kernel = tf.Variable(quantized.astype(np.int8), trainable=False,
                                  name=layer.name + "_int8_kernel")
        self.scale = tf.Variable(scale.astype(np.float32), trainable=False,
                                 name=layer.name + "_int8_scale")
        self.bias = tf.Variable((bias / scale).astype(np.float32), trainable=False,
                                name=layer.name + "_int8_bias")
        self.variables = [self.kernel, self.scale, self.bias] + (
            [self.column_sums] if input_range is None else [])

    def __call__(self, inputs, *args, **kwargs):
        x = tf.convert_to_tensor(inputs, tf.float32)  # (rows, K)
        if self.range is None:
            lo = tf.minimum(tf.reduce_min(x), 0.0)
            hi = tf.maximum(tf.reduce_max(x), 0.0)
            bias = self.bias + lo * self.column_sums
        else:
            (lo, hi), bias = self.range, self.bias
        y = int8_matmul(x, lo, hi, self.kernel, bias) * self.scale  # (rows, N)
        return self.layer.activation(y)


def int8_matmul(x, lo, hi, kernel, bias):
    """x [M, K] float32 on uint8 codes of [lo, hi] (outside: clamped) . int8 kernel [K, N] + bias.

    Float32 [M, N]: round((x - lo) * 255 / (hi - lo)) . kernel * (hi - lo) / 255 + bias;
    the product of x - lo, not x (module docstring).
    """
    q = tf.raw_ops.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.quint8,
                              mode="MIN_FIRST")
    # The matmul reads the codes as SCALED ones of [0, hi - lo]: its own
    # MIN_FIRST bias correction is not the one that undoes the shift.
    return tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
        a=q.output, b=tf.bitcast(kernel, tf.qint8), bias=bias, min_a=0.0,
        max_a=q.output_max - q.output_min, min_b=-127.0, max_b=127.0, min_freezed_output=0.0,
        max_freezed_output=0.0, Toutput=tf.float32, input_quant_mode="SCALED")


def _check_kernel():
    """Refuses where this TensorFlow has no int8 matmul kernel (oneDNN off, not x86)."""
    try:
        int8_matmul(tf.ones((1, 1)), 0.0, 1.0, tf.ones((1, 1), tf.int8), tf.zeros((1,)))
    except tf.errors.NotFoundError:
        raise ValueError(
            "This TensorFlow has no QuantizedMatMulWithBiasAndDequantize kernel (it is "
            "oneDNN's: x86 CPUs, TF_ENABLE_ONEDNN_OPTS not 0); export without --quantize, "
            "or where the kernel runs.") from None
