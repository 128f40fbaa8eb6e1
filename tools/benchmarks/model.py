"""Encoder benchmarks on synthetic batches: inference, training steps, a step's profile.

Every comparison runs the systems in one process, on identical configs,
inputs and thread settings, interleaving their timed runs (`harness.interleaved`).
"""

import statistics

from . import harness, peers


def random_batch(config, batch_size, seq_length, seed=0):
    """Encoder inputs of random token ids (no padding), as numpy int32 arrays."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, config.vocab_size, (batch_size, seq_length)).astype("int32")
    return {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }


def pretraining_batch(config, batch_size, seq_length, predictions, seed=0):
    """`random_batch` plus random MLM positions, ids, weights and NSP labels."""
    import numpy as np

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
    return 3 * (harness.forward_flops(config, batch_size, seq_length) + head)


def keras_bert_forward(config, batch, dtype, jit_compile):
    """A callable running keras_bert's BertEncoder forward on `batch`."""
    import tensorflow as tf

    import keras_bert

    encoder = keras_bert.BertEncoder(**config.to_dict(), dtype=harness.DTYPES[dtype])
    x = {k: tf.constant(v) for k, v in batch.items()}
    f = tf.function(lambda x: encoder(x, training=False)["sequence_output"],
                    jit_compile=jit_compile)
    return lambda: f(x).numpy()


def keras_bert_optimizer():
    """keras_bert's AdamW, as create_optimizer and tools/pretrain.py use it."""
    # Keras' AdamW with a fused update kernel. keras-hub ships no optimizer;
    # its models train with Keras' AdamW.
    from keras_bert.training.optimizers import AdamW

    return AdamW(1e-4)


def keras_bert_pretraining(config, batch, dtype):
    """keras_bert's BertPretrainer (random weights), its inputs x and labels y."""
    import tensorflow as tf

    import keras_bert

    model = keras_bert.BertPretrainer(
        keras_bert.BertEncoder(**config.to_dict(), dtype=harness.DTYPES[dtype]))
    x = {k: tf.constant(batch[k])
         for k in ("token_ids", "segment_ids", "padding_mask", "masked_positions")}
    y = {k: tf.constant(batch[k])
         for k in ("masked_ids", "masked_weights", "next_sentence_labels")}
    return model, x, y


def keras_bert_train(config, batch, dtype, jit_compile):
    """`run(steps)` of keras_bert's BertPretrainer in model.fit."""
    model, x, y = keras_bert_pretraining(config, batch, dtype)
    model.compile(optimizer=keras_bert_optimizer(), jit_compile=jit_compile)
    return harness.fit_steps(model, x, y)


def keras_bert_loss(config, batch, dtype):
    """(model, loss_fn(training), optimizer) of keras_bert's BertPretrainer, for the profile."""
    model, x, y = keras_bert_pretraining(config, batch, dtype)
    return (model, lambda training: model.compute_loss(x, y, model(x, training=training)),
            keras_bert_optimizer())


def bench_inference(args):
    """Encoder forward passes on a random batch: keras_bert vs keras-hub vs PyTorch.

    Tokens/s, GFLOP/s against this machine's matmul peak, MFU (bfloat16 rows,
    against --peak-tflops or a known GPU's peak) and the ratio to PyTorch.
    """
    import tensorflow as tf

    import keras_bert

    config = keras_bert.BertConfig.from_preset(args.preset, vocab_size=30522)
    batch = random_batch(config, args.batch_size, args.max_seq_length)
    peak_name, bf16_peak = harness.bf16_peak_flops(args.peak_tflops)
    print(f"MFU against: {peak_name}", flush=True)
    tokens = args.batch_size * args.max_seq_length
    flops = harness.forward_flops(config, args.batch_size, args.max_seq_length)
    rows = []
    for dtype in args.dtypes:
        print(f"inference {args.preset} {dtype} {args.batch_size}x{args.max_seq_length}",
              flush=True)
        systems = {}
        for jit in args.jit_compile:
            systems[f"keras_bert (jit={jit})"] = keras_bert_forward(
                config, batch, dtype, jit == "on")
        if "keras_hub" in args.systems:
            for jit in args.jit_compile:
                run = harness.optional("keras_hub", lambda: peers.keras_hub_forward(
                    config, batch, dtype, jit == "on"))
                if run:
                    systems[f"keras-hub (jit={jit})"] = run
        if "torch" in args.systems:
            run = harness.optional("torch", lambda: peers.torch_forward(config, batch, dtype))
            if run:
                systems["PyTorch transformers"] = run
        times = harness.interleaved(systems, args.repeats)
        peak = harness.matmul_peak(tf.bfloat16 if dtype == "bfloat16" else tf.float32,
                                   args.matmul_peak_size)
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
            harness.add_mfu(row, dtype, flops / median, bf16_peak)
            if reference:
                row["vs PyTorch"] = statistics.median(times[reference]) / median
            rows.append(row)
            print("  " + harness.format_row(row), flush=True)
        print(f"  matmul peak {dtype}: {peak:.0f} GFLOP/s", flush=True)
    return rows


def bench_training(args):
    """MLM pretraining steps in model.fit: keras_bert vs keras-hub vs PyTorch + AdamW.

    keras_bert's BertPretrainer and keras-hub's BertMaskedLM train with
    model.fit (only the steps are timed); PyTorch's BertForPreTraining with
    torch.optim.AdamW. 20 masked positions per sequence.
    """
    import tensorflow as tf

    import keras_bert

    rows = []
    peaks = {}
    peak_name, bf16_peak = harness.bf16_peak_flops(args.peak_tflops)
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
                    run = harness.optional("keras_hub", lambda: peers.keras_hub_train(
                        config, batch, dtype, jit == "on"))
                    if run:
                        systems[f"keras-hub BertMaskedLM (jit={jit})"] = run
            if "torch" in args.systems:
                run = harness.optional("torch", lambda: peers.torch_train(config, batch, dtype))
                if run:
                    systems["PyTorch BertForPreTraining + AdamW"] = run
            steps = args.train_steps
            times = harness.interleaved({k: (lambda r=r: r(steps)) for k, r in systems.items()},
                                        args.repeats)
            if dtype not in peaks:
                peaks[dtype] = harness.matmul_peak(
                    tf.bfloat16 if dtype == "bfloat16" else tf.float32, args.matmul_peak_size)
                print(f"  matmul peak {dtype}: {peaks[dtype]:.0f} GFLOP/s", flush=True)
            hub = [statistics.median(t) for k, t in times.items() if k.startswith("keras-hub")]
            for name, secs in times.items():
                median = statistics.median(secs)
                gflops = steps * flops / median / 1e9
                row = {"preset": preset, "dtype": dtype, "system": name,
                       "examples/s": steps * args.train_batch_size / median,
                       "tokens/s": steps * args.train_batch_size * args.max_seq_length / median,
                       "GFLOP/s": gflops, "% matmul peak": 100 * gflops / peaks[dtype]}
                harness.add_mfu(row, dtype, gflops * 1e9, bf16_peak)
                if hub:
                    row["vs best keras-hub"] = min(hub) / median
                if "PyTorch BertForPreTraining + AdamW" in times:
                    row["vs PyTorch"] = statistics.median(
                        times["PyTorch BertForPreTraining + AdamW"]) / median
                rows.append(row)
                print("  " + harness.format_row(row), flush=True)
    return rows


PHASES = ("forward", "forward + dropout", "forward + backward", "full step")


def phases(model, loss_fn, optimizer, jit_compile):
    """tf.functions for the cumulative phases of one MLM train step, by PHASES name."""
    import tensorflow as tf

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
    import tensorflow as tf

    import keras_bert

    rows = []
    for preset in args.train_presets:
        config = keras_bert.BertConfig.from_preset(preset, vocab_size=30522)
        batch = pretraining_batch(config, args.train_batch_size, args.max_seq_length, 20)
        step_flops = pretraining_flops(config, args.train_batch_size, args.max_seq_length, 20)
        flops = {"forward": step_flops / 3, "forward + dropout": step_flops / 3,
                 "forward + backward": step_flops, "full step": step_flops}
        for dtype in args.dtypes:
            peak = harness.matmul_peak(tf.bfloat16 if dtype == "bfloat16" else tf.float32,
                                       args.matmul_peak_size)
            for jit in args.jit_compile:
                print(f"profile {preset} {dtype} jit={jit} "
                      f"{args.train_batch_size}x{args.max_seq_length}", flush=True)
                builders = {"keras_bert": keras_bert_loss}
                if "keras_hub" in args.systems:
                    builders["keras-hub"] = peers.keras_hub_loss
                systems = {}
                for name, build in builders.items():
                    built = harness.optional(name, lambda: build(config, batch, dtype))
                    if built:
                        for phase, fn in phases(*built, jit == "on").items():
                            systems[(name, phase)] = lambda fn=fn: fn().numpy()
                times = harness.interleaved(systems, args.repeats)
                for (name, phase), secs in times.items():
                    median = statistics.median(secs)
                    row = {"preset": preset, "dtype": dtype, "jit": jit, "system": name,
                           "phase": phase, "ms": 1000 * median,
                           "GFLOP/s": flops[phase] / median / 1e9,
                           "% matmul peak": 100 * flops[phase] / median / 1e9 / peak}
                    rows.append(row)
                    print("  " + harness.format_row(row), flush=True)
                print(f"  matmul peak {dtype}: {peak:.0f} GFLOP/s", flush=True)
    return rows


_SYNTHETIC = (harness.add_max_seq_length, harness.add_repeats, harness.add_dtypes,
              harness.add_jit_compile, harness.add_systems, harness.add_matmul_peak_size)
_TRAINING = (harness.add_train_presets, harness.add_train_batch_size)

BENCHMARKS = (
    harness.Benchmark(
        "inference", bench_inference,
        (harness.add_preset, harness.add_batch_size, *_SYNTHETIC, harness.add_peak_tflops),
        "encoder forward passes: keras_bert vs keras-hub vs PyTorch",
        lambda args: args.preset),
    harness.Benchmark(
        "training", bench_training,
        (*_TRAINING, *_SYNTHETIC, harness.add_train_steps, harness.add_peak_tflops),
        "MLM pretraining steps: keras_bert vs keras-hub vs PyTorch",
        lambda args: ",".join(args.train_presets)),
    harness.Benchmark(
        "profile", bench_profile, (*_TRAINING, *_SYNTHETIC),
        "a training step split into forward, dropout, backward and update",
        lambda args: ",".join(args.train_presets)),
)


def add_parsers(subparsers):
    """Adds the subcommands inference, training and profile."""
    harness.add_benchmark_parsers(subparsers, BENCHMARKS)
