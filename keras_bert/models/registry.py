"""The one task registry.

Each folder of `keras_bert.tasks` registers a `TaskSpec` (head model,
fine-tuning task) under its name, the name that task.json, tools/finetune.py
--task and exports use, and keeps it as its `TASK`. The generic machinery
(model directories, fine-tuning) looks tasks up here by name, so it never
imports `keras_bert.tasks`.

A name that is not registered yet is looked for in the task folder of that
name: `get_task("span_qa")` imports `keras_bert.tasks.span_qa` on demand
and registers its `TASK`. So loading a model directory needs no earlier
import of its task (nor `keras_bert/__init__.py` importing them all), and
importing one task does not import the others' code paths at run time.

The serving module is not looked up here: a task model class names its own
(`serving_module_class`, from its folder's serving.py), so a model's
`predict` on strings and its export never go through the registry.
"""

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What makes one task: its head model, fine-tuning task and serving module.

    Attributes:
        name: str, the task's name ("classification", ...).
        model: the `BertTask` subclass.
        finetune: the `keras_bert.training.finetune.FinetuneTask` subclass,
            or None (pretraining is not fine-tuned).
        serving: the `keras_bert.export.BertServingModule` subclass; default
            the model class's `serving_module_class` (None: the base module,
            embed / encode / preprocess).
    """

    name: str
    model: type
    finetune: type = None
    serving: type = None

    def __post_init__(self):
        if self.serving is None:  # One fact: the model class names its serving module.
            object.__setattr__(self, "serving", getattr(self.model, "serving_module_class", None))


_REGISTRY = {}


def register_task(spec):
    """Adds `spec` (a `TaskSpec`) to the registry and returns it.

    Its model class gets `task_name` and, when the spec names one, its
    `serving_module_class`.
    """
    if spec.name in _REGISTRY and _REGISTRY[spec.name] != spec:
        raise ValueError(f"A task named {spec.name!r} is registered already.")
    spec.model.task_name = spec.name
    if spec.serving is not None:
        spec.model.serving_module_class = spec.serving
    _REGISTRY[spec.name] = spec
    return spec


def task_names():
    """Sorted names of the registered tasks."""
    return sorted(_REGISTRY)


def get_task(name, where=None):
    """The `TaskSpec` registered as `name`; a ValueError naming the known ones if none.

    Args:
        name: str, the task's name.
        where: str, where the name was read (a file, a flag), for the error.
    """
    if name not in _REGISTRY and isinstance(name, str) and name.isidentifier():
        _import_task_folder(name)
    if name not in _REGISTRY:
        source = f"{where} names" if where else "Received"
        raise ValueError(
            f"{source} an unknown task {name!r}. Known tasks: {task_names()}."
        )
    return _REGISTRY[name]


def _import_task_folder(name):
    """Imports `keras_bert.tasks.NAME` and registers its `TASK`, if that folder exists."""
    module_name = f"keras_bert.tasks.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            return  # No such folder: get_task reports an unknown task.
        raise  # A task folder whose own imports fail: show the real cause.
    spec = getattr(module, "TASK", None)
    if isinstance(spec, TaskSpec) and spec.name == name and name not in _REGISTRY:
        register_task(spec)
