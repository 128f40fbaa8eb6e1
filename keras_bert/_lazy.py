"""Lazy package attributes (PEP 562): a package's public names import their module on first use.

A package `__init__.py` that lists its names here instead of importing them
costs nothing to import, so a light module inside it (a task's options.py,
keras_bert/data/task_options.py, keras_bert/config.py) loads without
TensorFlow: `import keras_bert.tasks.classification.options` runs
keras_bert/__init__.py, keras_bert/tasks/__init__.py and the task folder's
__init__.py, and each of them only records where its names live.

Example (a package's __init__.py):

    from keras_bert._lazy import lazy_exports

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {"model": ["BertClassifier"]})
"""

import importlib
import importlib.util
import pkgutil
import sys


def lazy_exports(package, exports):
    """The module `__getattr__`, `__dir__` and `__all__` of a package with lazy names.

    Args:
        package: str, the package's `__name__`.
        exports: dict {module: [names]}: each name is `module`'s attribute of
            that name, `module` relative to `package` ("model", "layers.pooler").

    A submodule is an attribute too, imported on first use
    (`keras_bert.training` after a bare `import keras_bert`).

    Returns:
        (__getattr__, __dir__, __all__): assign them to the package's names of
        the same spelling. `__all__` holds the exported names, not the
        submodules (so `import *` loads no more than it names).
    """
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name):
        if name in where:
            value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            return importlib.import_module(f"{package}.{name}")  # Sets the attribute itself.
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # Later look-ups find the module attribute and skip __getattr__.
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        submodules = {info.name for info in pkgutil.iter_modules(sys.modules[package].__path__)}
        return sorted(set(vars(sys.modules[package])) | set(where) | submodules)

    return __getattr__, __dir__, sorted(where)
