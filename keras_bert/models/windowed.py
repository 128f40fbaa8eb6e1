"""WindowedTask: the long-document switch of the classifier and the token classifier.

A model with `windows` set reads a text longer than its max_seq_length as
overlapping windows (`keras_bert.text.windows`) in `predict` on strings and
in its export; the constructor argument is saved in task.json's task_config.
"""

from keras_bert.text.windows import check_windows


class WindowedTask:
    """Mixin of task models that may read long texts in windows.

    The windows dict: {"stride": int, "max_windows": int} (and "combine":
    "mean" or "max" for classifiers); see `keras_bert.text.windows.check_windows`.
    """

    #: Whether the windows dict has "combine" (window logits combined per text).
    combines_windows = True

    def _init_windows(self, windows):
        # object.__setattr__: Keras would wrap a dict attribute for tracking.
        object.__setattr__(self, "_windows", check_windows(windows, self.combines_windows))

    @property
    def windows(self):
        """The windows dict (a copy), or None: texts are truncated at max_seq_length."""
        windows = getattr(self, "_windows", None)
        return None if windows is None else dict(windows)

    def set_windows(self, windows):
        """Switches windows on (a dict, see the class docstring) or off (None) for
        `predict` on strings, later exports and `save_pretrained`.

        Example:
        >>> classifier.set_windows({"stride": 128, "max_windows": 8, "combine": "mean"})
        >>> classifier.predict(["a long review ..."])["num_windows"]
        """
        self._init_windows(windows)
        # predict's serving module was built for the old setting.
        object.__setattr__(self, "_serving_module_cache", None)

    def windows_config(self):
        """{"windows": ...} for task_config when windows are on; {} when off."""
        return {} if self.windows is None else {"windows": self.windows}
