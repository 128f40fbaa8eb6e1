"""Corpus -> pretraining examples; shared reading and reporting helpers.

Imports nothing from keras_bert.models.
"""

from keras_bert.data.corpus import prose_to_sentences, pydoc_topics_documents, read_documents
from keras_bert.data.corpus import split_sentences, write_corpus
from keras_bert.data.instances import create_instances_from_document, document_windows
from keras_bert.data.instances import truncate_seq_pair
from keras_bert.data.pretraining_data import PretrainingDataConfig, create_pretraining_data
from keras_bert.data.pretraining_data import parse_examples, read_metadata, shard_paths
from keras_bert.data.pretraining_data import vocab_hash
from keras_bert.data.pretraining_shards import create_pretraining_shard, parse_shard

__all__ = [
    "PretrainingDataConfig", "create_instances_from_document", "create_pretraining_data",
    "create_pretraining_shard", "document_windows", "parse_examples", "parse_shard",
    "prose_to_sentences", "pydoc_topics_documents", "read_documents", "read_metadata",
    "shard_paths", "split_sentences", "truncate_seq_pair", "vocab_hash", "write_corpus",
]
