"""BertTask: the base of every model that puts a head on a `BertEncoder`."""

import keras

from keras_bert.models import model_dir as model_dir_lib


class BertTask(keras.Model):
    """A functional model made of `encoder` plus a task head.

    Subclasses build their graph in `__init__`, keep the encoder as
    `self.encoder`, and list their own constructor arguments in
    `task_config()`. Saving, loading and serialization are shared here.
    """

    task_name = None

    def task_config(self):
        """The constructor arguments other than `encoder` (JSON-able)."""
        return {}

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self.task_config(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("encoder"), dict):
            config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)

    def save_pretrained(self, model_dir, vocab_file=None, task_info=None):
        """Writes the model directory: config.json, task.json, weights, vocab.txt.

        Args:
            model_dir: str, directory to (re)write atomically.
            vocab_file: str, vocab.txt to copy in; defaults to the one the
                model was loaded with.
            task_info: dict of extra facts for task.json, e.g.
                {"max_seq_length": 128}.
        """
        model_dir_lib.save_model_dir(self, model_dir, vocab_file=vocab_file, task_info=task_info)

    @classmethod
    def from_pretrained(cls, model_dir, dtype=None, **task_kwargs):
        """Loads a model directory as this task.

        A directory saved from this same task (with the same `task_kwargs`,
        if given) loads whole, head included. Any other directory (an
        encoder, a pretrainer, another task) gives its encoder weights and
        a freshly initialized head built from `task_kwargs`.

        Example:
        >>> clf = BertClassifier.from_pretrained("models/minilm", num_classes=3)
        """
        from keras_bert.models.encoder import BertEncoder

        encoder_kwargs = {} if dtype is None else {"dtype": dtype}
        model = model_dir_lib.load_model_dir(model_dir, BertEncoder, **encoder_kwargs)
        if isinstance(model, cls):
            saved = model.task_config()
            if all(saved.get(k) == v for k, v in task_kwargs.items()):
                return model
        encoder = getattr(model, "encoder", model)
        fresh = cls(encoder=encoder, **task_kwargs)
        fresh.vocab_file = model.vocab_file
        return fresh
