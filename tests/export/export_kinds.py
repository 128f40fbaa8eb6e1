"""One tiny export of each kind (classifier, token classifier, span QA, multi-label, masked LM),
built once.

Untrained (seeded) heads: the serving tests here check which ops an export
uses, how it loads elsewhere and what TF Serving's files say, not answers.
The `three_exports` session fixture (tests/conftest.py) builds them once.
"""

import os

from keras_bert.export import export_model
from keras_bert.tasks import BertClassifier, BertMultiLabelClassifier, BertSpanLabeler
from keras_bert.tasks import BertMaskedLM, BertTokenClassifier
from tests.export.conftest import LABELS, tiny_encoder, write_vocab

KINDS = ("classifier", "tagger", "qa", "multi_label", "masked_lm")
#: The multi-label export's labels and decision thresholds (one each).
MULTI_LABELS = ["animal", "movie", "question"]
MULTI_THRESHOLDS = [0.3, 0.5, 0.7]


def build_exports(root):
    """{kind: export version dir} for KINDS, written under `root`."""
    vocab_file = write_vocab(root)
    models = {
        "classifier": BertClassifier(tiny_encoder(0), num_classes=3, label_names=LABELS),
        "tagger": BertTokenClassifier(tiny_encoder(1), num_classes=3,
                                      label_names=["O", "ANIMAL", "WORD"]),
        "qa": BertSpanLabeler(tiny_encoder(2)),
        "multi_label": BertMultiLabelClassifier(tiny_encoder(3), num_classes=3,
                                                label_names=MULTI_LABELS,
                                                thresholds=MULTI_THRESHOLDS),
        "masked_lm": BertMaskedLM(tiny_encoder(4)),
    }
    task_info = {"classifier": {"max_seq_length": 24}, "tagger": {"max_seq_length": 24},
                 "qa": {"max_seq_length": 20, "doc_stride": 4, "max_query_length": 6,
                        "max_answer_length": 5},
                 "multi_label": {"max_seq_length": 24}, "masked_lm": {"max_seq_length": 24}}
    exports = {}
    for kind, model in models.items():
        model_dir = os.path.join(root, "models", kind)
        model.save_pretrained(model_dir, vocab_file=vocab_file, task_info=task_info[kind])
        exports[kind] = export_model(model_dir, os.path.join(root, "exports", kind))
    return exports
