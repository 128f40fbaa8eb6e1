"""Corpus -> pretraining examples; shared reading and reporting helpers.

Imports nothing from keras_bert.models. The names below load on first use
(PEP 562): keras_bert/data/task_options.py, which every task's options.py
imports, loads without TensorFlow.
"""

from keras_bert._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "corpus": ["prose_to_sentences", "pydoc_topics_documents", "read_documents",
                   "split_sentences", "write_corpus"],
        "instances": ["create_instances_from_document", "document_windows", "truncate_seq_pair"],
        "pretraining_data": ["PretrainingDataConfig", "create_pretraining_data",
                             "parse_examples", "read_metadata", "shard_paths", "vocab_hash"],
        "pretraining_shards": ["create_pretraining_shard", "parse_shard"],
    },
)
