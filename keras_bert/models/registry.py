"""The one task registry.

Each folder of `keras_bert.tasks` registers a `TaskSpec` (head model,
fine-tuning task, serving module) under its name: the name that task.json,
tools/finetune.py --task and exports use. The generic machinery (model
directories, fine-tuning, export) looks tasks up here, so it never imports
`keras_bert.tasks` (importing `keras_bert` registers them all).
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What makes one task: its head model, fine-tuning task and serving module.

    Attributes:
        name: str, the task's name ("classification", ...).
        model: the `BertTask` subclass.
        finetune: the `keras_bert.training.finetune.FinetuneTask` subclass,
            or None (pretraining is not fine-tuned).
        serving: the `keras_bert.export.BertServingModule` subclass, or
            None for the base module (embed / encode / preprocess).
    """

    name: str
    model: type
    finetune: type = None
    serving: type = None


_REGISTRY = {}


def register_task(spec):
    """Adds `spec` (a `TaskSpec`) to the registry; its model gets `task_name`."""
    if spec.name in _REGISTRY and _REGISTRY[spec.name] != spec:
        raise ValueError(f"A task named {spec.name!r} is registered already.")
    spec.model.task_name = spec.name
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
    if name not in _REGISTRY:
        source = f"{where} names" if where else "Received"
        raise ValueError(
            f"{source} an unknown task {name!r}. Known tasks: {task_names()}."
        )
    return _REGISTRY[name]
