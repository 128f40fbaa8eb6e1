"""Quickstart: build a BERT, fit it one epoch, save it as a model directory, reload it."""

import argparse
import os
import tempfile

import keras
import numpy as np

import keras_bert


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", default=os.path.join(tempfile.gettempdir(), "kb_quickstart"))
    args = parser.parse_args()

    config = keras_bert.BertConfig.from_preset("tiny", vocab_size=1000)
    encoder = keras_bert.BertEncoder(**config.to_dict())
    classifier = keras_bert.BertClassifier(encoder, num_classes=2, label_names=["no", "yes"])
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, 1000, size=(64, 16)).astype("int32")
    labels = (token_ids[:, 1] > 500).astype("int32")
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
         "padding_mask": np.ones_like(token_ids)}
    classifier.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    classifier.fit(x, labels, batch_size=16, epochs=3)
    classifier.save_pretrained(args.output)
    reloaded = keras_bert.BertClassifier.from_pretrained(args.output)
    diff = np.abs(reloaded.predict(x, verbose=0) - classifier.predict(x, verbose=0)).max()
    print(f"saved to {args.output}; reloaded max |diff| = {diff:.2e}")


if __name__ == "__main__":
    main()
