"""The pair-truncation tie rule of docs/text.md, against transformers' fast tokenizer.

keras_bert's "longest_first" is google-research/bert's (tests/text/test_packer.py checks
that); transformers' BertTokenizerFast (the Rust tokenizers library) differs, and
docs/text.md says exactly where: an odd budget, both texts longer than half of it, and B
at least as long as A. Every pair of lengths up to 9 under budgets 3..10 is checked.
"""

import pytest

from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.text.vocab import SPECIAL_TOKENS

# Eight preprocessors and transformers' tokenizer: ~10 s, the slow tier.
pytestmark = pytest.mark.slow

transformers = pytest.importorskip("transformers")

WORDS = list(SPECIAL_TOKENS) + ["a", "b"]


def _kept(packed_ids, tokens):
    """(tokens of A kept, tokens of B kept) of packed ids (one row)."""
    return sum(1 for i in packed_ids if i == tokens["a"]), sum(
        1 for i in packed_ids if i == tokens["b"])


def test_the_tie_rule_and_where_it_differs_from_bert_tokenizer_fast(tmp_path):
    if int(transformers.__version__.split(".")[0]) >= 5:  # Its BertTokenizer is the fast one.
        fast = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(WORDS)})
    else:
        (tmp_path / "vocab.txt").write_text("\n".join(WORDS) + "\n")
        fast = transformers.BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"))
    ids = {t: WORDS.index(t) for t in ("a", "b")}
    pairs = [(la, lb) for la in range(1, 10) for lb in range(1, 10)]
    texts_a = [" ".join(["a"] * la) for la, _ in pairs]
    texts_b = [" ".join(["b"] * lb) for _, lb in pairs]
    tokenizer = BertTokenizer(WORDS)
    differ = set()
    for budget in range(3, 11):
        preprocessor = BertPreprocessor(tokenizer, sequence_length=budget + 3)
        ours = [_kept(row, ids) for row in preprocessor(texts_a, texts_b)["token_ids"].numpy()]
        theirs = [_kept(row, ids) for row in fast(
            texts_a, texts_b, truncation="longest_first", max_length=budget + 3)["input_ids"]]
        for (la, lb), mine, other in zip(pairs, ours, theirs):
            assert sum(mine) == sum(other) == min(la + lb, budget)
            if mine != other:
                differ.add((la, lb, budget))
                # Where they differ, A has the odd token here and B there.
                assert mine == (budget // 2 + 1, budget // 2) and other == mine[::-1]
    documented = {(la, lb, budget) for la, lb in pairs for budget in range(3, 11)
                  if budget % 2 and min(la, lb) > budget / 2 and lb >= la}
    assert differ == documented
