"""The peers keras_bert is compared with, built from keras_bert's own BertConfig.

keras-hub (`BertBackbone`, `BertMaskedLM`) and PyTorch with Hugging Face
transformers (`BertModel`, `BertForPreTraining`,
`BertForSequenceClassification`). Each builder imports its peer's package
when called: a missing one raises ImportError, which `harness.optional`
reports and skips.
"""

import os
import time
import warnings

from . import harness


def keras_hub_backbone(config, dtype):
    """keras-hub's BertBackbone with random weights and keras_bert's config."""
    import keras_hub

    return keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        max_sequence_length=config.max_position_embeddings,
        dtype=harness.DTYPES[dtype],
    )


def keras_hub_forward(config, batch, dtype, jit_compile):
    """A callable running keras-hub's BertBackbone forward on `batch`."""
    import tensorflow as tf

    backbone = keras_hub_backbone(config, dtype)
    x = {
        "token_ids": tf.constant(batch["token_ids"]),
        "segment_ids": tf.constant(batch["segment_ids"]),
        "padding_mask": tf.constant(batch["padding_mask"]),
    }
    f = tf.function(lambda x: backbone(x, training=False)["sequence_output"],
                    jit_compile=jit_compile)
    return lambda: f(x).numpy()


def keras_hub_pretraining(config, batch, dtype):
    """keras-hub's BertMaskedLM (random weights), its inputs, labels and weights."""
    import keras_hub
    import tensorflow as tf

    model = keras_hub.models.BertMaskedLM(keras_hub_backbone(config, dtype), preprocessor=None)
    x = {"token_ids": tf.constant(batch["token_ids"]),
         "segment_ids": tf.constant(batch["segment_ids"]),
         "padding_mask": tf.constant(batch["padding_mask"]),
         "mask_positions": tf.constant(batch["masked_positions"])}
    return model, x, tf.constant(batch["masked_ids"]), tf.constant(batch["masked_weights"])


def keras_hub_train(config, batch, dtype, jit_compile):
    """`run(steps)` of keras-hub's BertMaskedLM with Keras' AdamW in model.fit."""
    import keras

    model, x, ids, weights = keras_hub_pretraining(config, batch, dtype)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=["sparse_categorical_accuracy"], jit_compile=jit_compile)
    return harness.fit_steps(model, x, ids, weights)


def keras_hub_loss(config, batch, dtype):
    """(model, loss_fn(training), optimizer) of keras-hub's BertMaskedLM, for the profile."""
    import keras

    model, x, ids, weights = keras_hub_pretraining(config, batch, dtype)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return (model, lambda training: loss(ids, model(x, training=training), weights),
            keras.optimizers.AdamW(1e-4))


def transformers_config(config):
    """The transformers.BertConfig of a keras_bert BertConfig (the shapes the peers compare)."""
    import transformers

    return transformers.BertConfig(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_position_embeddings,
    )


def _torch_inputs(batch):
    import torch

    return {"input_ids": torch.from_numpy(batch["token_ids"].astype("int64")),
            "token_type_ids": torch.from_numpy(batch["segment_ids"].astype("int64")),
            "attention_mask": torch.from_numpy(batch["padding_mask"].astype("int64"))}


def torch_forward(config, batch, dtype):
    """A callable running transformers' BertModel forward on `batch` (bf16 by autocast)."""
    import torch
    import transformers

    torch.set_num_threads(harness.usable_cores())
    model = transformers.BertModel(transformers_config(config)).eval()
    inputs = _torch_inputs(batch)

    def run():
        with torch.inference_mode(), torch.autocast(
            "cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16"
        ):
            out = model(**inputs)
            out.last_hidden_state.float().numpy()

    return run


def _torch_steps(model, optimizer, inputs, dtype="float32", clipnorm=None):
    """`run(steps)`: `steps` optimizer steps on `inputs`, timing itself."""
    import torch

    def run(steps):
        start = time.perf_counter()
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
                loss = model(**inputs).loss
            loss.backward()
            if clipnorm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clipnorm)
            optimizer.step()
        loss.item()
        return time.perf_counter() - start

    return run


def torch_train(config, batch, dtype):
    """transformers BertForPreTraining + torch.optim.AdamW on the same batch.

    MLM labels are the masked ids at the same masked positions (-100
    elsewhere), plus the NSP labels. Note that transformers' head projects
    every position to the vocabulary (then ignores the unlabeled ones),
    where keras_bert's projects only the masked positions.
    """
    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(harness.usable_cores())
    model = transformers.BertForPreTraining(transformers_config(config)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    labels = np.full(batch["token_ids"].shape, -100, "int64")
    np.put_along_axis(labels, batch["masked_positions"], batch["masked_ids"], axis=1)
    inputs = {**_torch_inputs(batch), "labels": torch.from_numpy(labels),
              "next_sentence_label": torch.from_numpy(
                  batch["next_sentence_labels"].astype("int64"))}
    return _torch_steps(model, optimizer, inputs, dtype)


def torch_classifier_train(config, batch, labels):
    """transformers BertForSequenceClassification + AdamW + clip_grad_norm_ 1.0, float32."""
    import torch
    import transformers

    torch.set_num_threads(harness.usable_cores())
    torch_config = transformers_config(config)
    torch_config.num_labels = 3
    model = transformers.BertForSequenceClassification(torch_config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    inputs = {**_torch_inputs(batch), "labels": torch.from_numpy(labels.astype("int64"))}
    return _torch_steps(model, optimizer, inputs, clipnorm=1.0)


def save_torch_classifier(classifier, export_dir, folder):
    """Writes `classifier` (a BertClassifier) as transformers' BertForSequenceClassification
    + BertTokenizerFast into `folder` (save_pretrained) for `_torch_worker.py`: every
    weight copied, its label names (or "0", "1", ...), the vocabulary and casing of
    `export_dir` (its SavedModel).

    Returns:
        bytes on disk {"float32": the folder, "int8": the same with dynamic int8 weights}.
    """
    import keras
    import torch
    import transformers

    from keras_bert.text import infer_lowercase

    def value(variable):
        return torch.from_numpy(keras.ops.convert_to_numpy(variable).astype("float32"))

    encoder, config = classifier.encoder, classifier.encoder.get_bert_config()
    torch_config = transformers_config(config)
    label_names = classifier.label_names or [str(i) for i in range(classifier.num_classes)]
    torch_config.update({"type_vocab_size": config.type_vocab_size,
                         "layer_norm_eps": config.layer_norm_epsilon,
                         "id2label": dict(enumerate(label_names)),
                         "label2id": {name: i for i, name in enumerate(label_names)}})
    model = transformers.BertForSequenceClassification(torch_config).eval()
    pairs = [(model.bert.embeddings.word_embeddings.weight, encoder.embeddings.token_embeddings),
             (model.bert.embeddings.position_embeddings.weight,
              encoder.embeddings.position_embeddings),
             (model.bert.embeddings.token_type_embeddings.weight,
              encoder.embeddings.segment_embeddings)]

    def linear(torch_linear, dense):
        pairs.extend([(torch_linear.weight, value(dense.kernel).T), (torch_linear.bias, dense.bias)])

    def norm(torch_norm, layer_norm):
        pairs.extend([(torch_norm.weight, layer_norm.gamma), (torch_norm.bias, layer_norm.beta)])

    norm(model.bert.embeddings.LayerNorm, encoder.embeddings.layer_norm)
    for layer, block in zip(model.bert.encoder.layer, encoder.encoder_blocks):
        attention = layer.attention.self  # Our qkv kernel is [H, 3H], laid out [q | k | v].
        for part, kernel, bias in zip((attention.query, attention.key, attention.value),
                                      value(block.qkv_dense.kernel).chunk(3, dim=-1),
                                      value(block.qkv_dense.bias).chunk(3)):
            pairs.extend([(part.weight, kernel.T), (part.bias, bias)])
        linear(layer.attention.output.dense, block.attention_output_dense)
        norm(layer.attention.output.LayerNorm, block.attention_layer_norm)
        linear(layer.intermediate.dense, block.intermediate_dense)
        linear(layer.output.dense, block.output_dense)
        norm(layer.output.LayerNorm, block.output_layer_norm)
    linear(model.bert.pooler.dense, encoder.pooler.dense)
    linear(model.classifier, classifier.output_dense)
    with torch.no_grad():
        for parameter, source in pairs:
            parameter.copy_(source if isinstance(source, torch.Tensor) else value(source))
    model.save_pretrained(folder)
    vocab_file = os.path.join(export_dir, "assets", "vocab.txt")
    transformers.BertTokenizerFast(vocab_file, do_lower_case=infer_lowercase(vocab_file)
                                   ).save_pretrained(folder)
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    int8_file = folder + "-int8.pt"  # What `_torch_worker.py` makes of it, for its size.
    with warnings.catch_warnings():  # torch.ao's deprecation notices
        warnings.simplefilter("ignore")
        torch.save(torch.ao.quantization.quantize_dynamic(
            model, {torch.nn.Linear}, dtype=torch.qint8).state_dict(), int8_file)
    return {"float32": size, "int8": size - os.path.getsize(
        os.path.join(folder, "model.safetensors")) + os.path.getsize(int8_file)}


def tokenizers_wordpiece(vocab, batches):
    """A callable tokenizing `batches` (lists of str) with Hugging Face tokenizers (Rust)."""
    from tokenizers import BertWordPieceTokenizer

    tok = BertWordPieceTokenizer(vocab, lowercase=True)
    return lambda: [tok.encode_batch(b, add_special_tokens=False) for b in batches]


def keras_hub_wordpiece(vocab, tf_batches):
    """A callable tokenizing `tf_batches` (string tensors) with keras-hub's WordPieceTokenizer."""
    import keras_hub
    import tensorflow as tf

    tok = keras_hub.tokenizers.WordPieceTokenizer(vocabulary=vocab, lowercase=True)
    fn = tf.function(lambda x: tok(x).flat_values)
    return lambda: [fn(b).numpy() for b in tf_batches]


def keras_hub_byte_pair(folder, tf_batches):
    """A callable tokenizing `tf_batches` with keras-hub's BytePairTokenizer of
    FOLDER's vocab.json and merges.txt."""
    import keras_hub
    import tensorflow as tf

    tok = keras_hub.tokenizers.BytePairTokenizer(
        vocabulary=f"{folder}/vocab.json", merges=f"{folder}/merges.txt")
    fn = tf.function(lambda x: tok(x).flat_values)
    return lambda: [fn(b).numpy() for b in tf_batches]


def tf_text_fast_wordpiece(vocab, tf_batches):
    """A callable tokenizing `tf_batches` with tensorflow-text's FastBertTokenizer."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    with open(vocab, encoding="utf-8") as f:
        tokens = f.read().splitlines()
    fast = tf_text.FastBertTokenizer(vocab=tokens, lower_case_nfd_strip_accents=True,
                                     token_out_type=tf.int32)
    fn = tf.function(lambda x: fast.tokenize(x).flat_values)
    return lambda: [fn(b).numpy() for b in tf_batches]
