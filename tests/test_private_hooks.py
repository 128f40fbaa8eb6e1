"""The private Keras / TensorFlow names in keras_bert._private_hooks still exist.

Each hook is its own test case, named after it, so an upgrade that drops or
stops calling one fails with that name.
"""

import ast
import importlib
import inspect
import os
import re

import keras
import pytest
import tensorflow as tf

from keras_bert._private_hooks import PRIVATE_HOOKS

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "keras_bert")


def _resolve(dotted):
    """The module, or the class inside a module, at a dotted path."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name)


def _keras_bert_sources():
    for root, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, os.path.dirname(PACKAGE)), f.read()


@pytest.mark.parametrize(
    "hook", PRIVATE_HOOKS, ids=[f"{h.owner}.{h.name}" for h in PRIVATE_HOOKS]
)
def test_private_hook_exists_and_is_still_called(hook):
    owner = _resolve(hook.owner)
    # Instance attributes (slots set in build()) are found in the class source.
    present = hasattr(owner, hook.name) or (
        isinstance(owner, type) and re.search(rf"\bself\.{hook.name}\b",
                                              inspect.getsource(owner)))
    assert present, (
        f"{hook.owner}.{hook.name} is gone from the installed Keras "
        f"{keras.__version__} / TensorFlow {tf.__version__}; "
        f"{hook.used_in} relies on it: {hook.why}"
    )
    if hook.called_from:
        source = inspect.getsource(getattr(owner, hook.called_from))
        assert re.search(rf"\bself\.{hook.name}\(", source), (
            f"{hook.owner}.{hook.called_from} no longer calls "
            f"self.{hook.name}(): the override in {hook.used_in} would "
            f"silently never run. {hook.why}"
        )


def test_each_hook_is_used_where_listed():
    sources = dict(_keras_bert_sources())
    for hook in PRIVATE_HOOKS:
        for path in hook.used_in.split(","):
            assert hook.name in sources[path.strip()], (
                f"{hook.owner}.{hook.name} is listed for {path} but not used "
                "there: remove it from keras_bert/_private_hooks.py."
            )


def test_keras_private_methods_overridden_in_keras_bert_are_listed():
    # A method of ours named like a private method of a Keras base class
    # overrides it (mixins included). Every such name must be listed.
    bases = (
        keras.layers.Layer, keras.Model, keras.optimizers.Optimizer,
        keras.callbacks.Callback, keras.optimizers.schedules.LearningRateSchedule,
        tf.Module,
    )
    listed = {hook.name for hook in PRIVATE_HOOKS}
    unlisted = []
    for path, source in _keras_bert_sources():
        for name in re.findall(r"^\s+def (_[a-z]\w*)\(self", source, re.M):
            if name not in listed and any(hasattr(b, name) for b in bases):
                unlisted.append(f"{path}: {name}")
    assert not unlisted, (
        f"keras_bert overrides private Keras methods {unlisted}: list them in "
        "keras_bert/_private_hooks.py with why no public API serves."
    )


@pytest.mark.parametrize(
    "pattern",
    [
        r"_convert_input_args",
        r"_allow_non_tensor_positional_args",
        r"_global_train_batch",
        r"wordpiece_tokenizer_learner_lib",
        r"\bkeras\.src\b",
        r"\btensorflow\.python\b",
    ],
)
def test_replaced_private_names_stay_out(pattern):
    # A module listed in _private_hooks may be imported where it is listed.
    listed = {(h.used_in, h.owner) for h in PRIVATE_HOOKS}
    found = [path for path, source in _keras_bert_sources()
             if path != os.path.join("keras_bert", "_private_hooks.py")
             and re.search(pattern, source)
             and not any(path == used and re.search(pattern, owner) for used, owner in listed)]
    assert not found, f"{pattern} is back in {found}; see keras_bert/_private_hooks.py"


def _private_names(source):
    """(used, defined): the private attribute names `source` reads or calls
    (`x._name`, `getattr(x, "_name")`), and those it defines itself
    (assignments, defs, classes, `setattr(x, "_name", ...)`, imports)."""
    used, defined = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.ImportFrom):
            defined.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            else:
                used.add(node.attr)
        elif (isinstance(node, ast.Call) and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str)):
            function = getattr(node.func, "id", getattr(node.func, "attr", None))
            if function in ("setattr", "__setattr__"):
                defined.add(node.args[1].value)
            elif function in ("getattr", "hasattr"):
                used.add(node.args[1].value)
    private = {n for n in used if n.startswith("_") and not n.startswith("__")}
    return private, defined


def test_every_private_name_read_or_called_is_listed():
    # A private name of Keras, TensorFlow or Python that keras_bert reads or
    # calls (not only overrides) must be listed: `self._compute_loss(...)`,
    # `self._loss_tracker.update_state(...)`, `getattr(sys, "_base_executable")`.
    # Names keras_bert defines itself anywhere are its own.
    used, defined = {}, set()
    for path, source in _keras_bert_sources():
        names, own = _private_names(source)
        defined |= own
        for name in names:
            used.setdefault(name, path)
    listed = {hook.name for hook in PRIVATE_HOOKS}
    unlisted = sorted(f"{path}: {name}" for name, path in used.items()
                      if name not in defined and name not in listed)
    assert not unlisted, (
        f"keras_bert uses private names {unlisted} of another package: list them in "
        "keras_bert/_private_hooks.py with why no public API serves."
    )


def test_private_name_scan_finds_calls_reads_and_getattr():
    # The scan itself: a wrong scan would let unlisted names through.
    used, defined = _private_names(
        "class A(Base):\n"
        "    def _mine(self):\n"
        "        self._set = 1\n"
        "        self._compute_loss(x)\n"
        "        self._loss_tracker.update_state(1)\n"
        "        getattr(sys, '_base_executable', None)\n"
        "        return self._mine, self._set\n"
    )
    assert used - defined == {"_compute_loss", "_loss_tracker", "_base_executable"}
