"""Sentence-pair instances for masked LM + next-sentence prediction.

google-research/bert's `create_instances_from_document`, written anew, with
one change: the 50/50 IsNext/NotNext draw comes first. The reference always
makes a NotNext pair when a chunk holds a single segment, which skews labels
towards NotNext on short documents and short targets; here an IsNext pair
from a one-segment chunk takes the document's next segment as B (or, for the
document's last segment, its second half). Labels come out 50/50 to within
sampling noise.
"""


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Trims a pair in place to `max_num_tokens`, as the reference does: while too
    long, drop one token of the longer list (B on a tie), from the front or the
    back with equal probability (`BertPacker` always cuts the back)."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc[0]
        else:
            trunc.pop()


def create_instances_from_document(pool, index, config, rng):
    """Cuts one document into sentence-pair instances.

    Args:
        pool: list of documents; a document is a list of segments, a segment
            a non-empty list of token ids (one corpus line).
        index: int, which document of `pool` to cut.
        config: a `PretrainingDataConfig`.
        rng: `random.Random`.

    Returns:
        list of `(tokens_a, tokens_b, is_random_next)`; the pair fits
        `config.max_seq_length - 3` tokens. `is_random_next` is True when B
        was taken from another document of `pool`.
    """
    document = pool[index]
    max_num_tokens = config.max_seq_length - 3
    # Mostly fill the sequence; sometimes aim shorter, so that short
    # sequences at fine-tuning time are not out of distribution.
    target_seq_length = max_num_tokens
    if rng.random() < config.short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    instances = []
    chunk, chunk_length = [], 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_seq_length:
            is_random_next = rng.random() < 0.5
            if len(chunk) == 1 and not is_random_next:
                if i + 1 < len(document):
                    # A one-segment chunk: its actual next segment is B.
                    i += 1
                    chunk.append(document[i])
                elif len(chunk[0]) >= 2:
                    # The document's last segment alone: A and B are its two
                    # halves (still consecutive text of the document).
                    cut = rng.randint(1, len(chunk[0]) - 1)
                    chunk = [chunk[0][:cut], chunk[0][cut:]]
                else:
                    is_random_next = True
            a_end = 1 if len(chunk) < 2 else rng.randint(1, len(chunk) - 1)
            tokens_a = [t for segment in chunk[:a_end] for t in segment]
            tokens_b = []
            if is_random_next:
                target_b_length = max(target_seq_length - len(tokens_a), 1)
                other = index
                for _ in range(10):
                    other = rng.randint(0, len(pool) - 1)
                    if other != index:
                        break
                random_document = pool[other]
                start = rng.randint(0, len(random_document) - 1)
                for segment in random_document[start:]:
                    tokens_b.extend(segment)
                    if len(tokens_b) >= target_b_length:
                        break
                # The unused segments go back to the document, not wasted.
                i -= len(chunk) - a_end
            else:
                tokens_b = [t for segment in chunk[a_end:] for t in segment]
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if tokens_a and tokens_b:
                instances.append((tokens_a, tokens_b, is_random_next))
            chunk, chunk_length = [], 0
        i += 1
    return instances


def document_windows(documents, size):
    """Groups a stream of documents into lists of `size`, lazily.

    A last window shorter than `size / 2` joins the one before, so it still has
    other documents to draw NotNext pairs from.
    """
    pending, current = None, []
    for document in documents:
        current.append(document)
        if len(current) == size:
            if pending is not None:
                yield pending
            pending, current = current, []
    if pending is not None and current and len(current) < size // 2:
        pending.extend(current)
        current = []
    if pending is not None:
        yield pending
    if current:
        yield current
