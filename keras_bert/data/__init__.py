"""Corpus -> pretraining examples. Imports nothing from keras_bert.models."""

from keras_bert.data.corpus import (
    prose_to_sentences,
    pydoc_topics_documents,
    read_documents,
    split_sentences,
    write_corpus,
)
from keras_bert.data.instances import (
    create_instances_from_document,
    document_windows,
    truncate_seq_pair,
)
from keras_bert.data.pretraining_data import (
    PretrainingDataConfig,
    create_pretraining_data,
    parse_examples,
    read_metadata,
    shard_paths,
    vocab_hash,
)
