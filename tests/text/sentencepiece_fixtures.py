"""Tiny XLM-R tokenizer folders, trained in the test session (see tests/conftest.py)."""

import json
import os
import shutil

from tests.text.hard_texts import multilingual_texts

SPECIAL_TOKENS_MAP = {
    "bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>",
    "sep_token": "</s>", "unk_token": "<unk>",
    "mask_token": {"content": "<mask>", "lstrip": True, "normalized": False,
                   "rstrip": False, "single_word": False},
}


def training_lines():
    """pydoc_data.topics' lines (English prose) and generated multilingual lines."""
    import pydoc_data.topics

    lines = [line for doc in pydoc_data.topics.topics.values()
             for line in doc.splitlines() if line.strip()]
    return lines[:3000] + multilingual_texts(2000, seed=123)


def build_xlmr_folders(root):
    """{model_type: folder}: SentencePiece unigram and bpe models trained on
    `training_lines`, each in a Hugging Face XLM-R folder (sentencepiece.bpe.model,
    tokenizer.json, tokenizer_config.json, special_tokens_map.json)."""
    import sentencepiece
    from transformers import XLMRobertaTokenizer

    corpus = os.path.join(root, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(training_lines()))
    folders = {}
    for model_type, vocab_size in (("unigram", 1000), ("bpe", 800)):
        prefix = os.path.join(root, model_type)
        sentencepiece.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, model_type=model_type, vocab_size=vocab_size,
            character_coverage=0.995, num_threads=1, minloglevel=2)
        source = os.path.join(root, f"{model_type}-source")
        os.makedirs(source)
        shutil.copy(prefix + ".model", os.path.join(source, "sentencepiece.bpe.model"))
        folder = os.path.join(root, f"xlmr-{model_type}")
        XLMRobertaTokenizer.from_pretrained(source).save_pretrained(folder)
        # transformers 5 writes tokenizer.json and tokenizer_config.json; published
        # XLM-R folders also hold these two.
        shutil.copy(prefix + ".model", os.path.join(folder, "sentencepiece.bpe.model"))
        with open(os.path.join(folder, "special_tokens_map.json"), "w") as f:
            json.dump(SPECIAL_TOKENS_MAP, f, indent=2)
        folders[model_type] = folder
    return folders
