"""The one task registry.

Each folder of `keras_bert.tasks` registers a `TaskSpec` under its name (the
name task.json, tools/finetune.py --task and exports use) as its spec.py is
imported; the generic machinery (model directories, fine-tuning) looks tasks
up here by name, so it never imports `keras_bert.tasks`. A task model class
names its own serving module (`serving_module_class`).

A task's options dataclass (its folder's options.py) makes its tools/finetune.py
flags (tools/_cli.py `task_options`): each field a flag (`--field-name`, or
metadata "flag"), metadata "help" and "choices" its help and choices; a field
several tasks declare is one flag. A ClassVar `eval_fraction_allowed = False`
refuses --eval-fraction.

The task.json schema is a dict {key: {"type": T, "minimum": M, "nullable": B}}
with T one of `SCHEMA_TYPES` ("numbers": a list of numbers), M optional (not
for lists) and B optional (default False: null is refused), for the keys the
task writes in task.json (top level and "task_config");
`keras_bert.models.model_dir` checks them.
"""

import dataclasses

SCHEMA_TYPES = ("integer", "number", "boolean", "string", "object", "strings", "numbers")


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What makes one task: its head model, fine-tuning task and serving module.

    Attributes:
        name: str, the task's name ("classification", ...).
        model: the `BertTask` subclass.
        finetune: the `keras_bert.training.finetune.FinetuneTask` subclass,
            or None (pretraining is not fine-tuned).
        serving: the `keras_bert.export.BertServingModule` subclass; default
            the model class's `serving_module_class` (None: the base module).
        options: the task's options dataclass, or None (it takes none).
        task_json: dict, the schema of the task.json keys the task writes
            (see the module docstring), or None.
    """

    name: str
    model: type
    finetune: type = None
    serving: type = None
    options: type = None
    task_json: dict = None

    def __post_init__(self):
        if self.serving is None:  # One fact: the model class names its serving module.
            object.__setattr__(self, "serving", getattr(self.model, "serving_module_class", None))
        for key, rule in (self.task_json or {}).items():
            if rule.get("type") not in SCHEMA_TYPES:
                raise ValueError(
                    f"Task {self.name!r}: task_json[{key!r}] must have a type in {SCHEMA_TYPES}. "
                    f"Received: {rule!r}."
                )
        if self.options is not None and not dataclasses.is_dataclass(self.options):
            raise ValueError(
                f"Task {self.name!r}: options must be a dataclass. Received: {self.options!r}."
            )

    def make_options(self, **values):
        """The task's options with `values` (defaults elsewhere); errors name the task."""
        if self.options is None:
            if values:
                raise ValueError(f"Task {self.name!r} takes no options. Received: {sorted(values)}.")
            return None
        known = {field.name for field in dataclasses.fields(self.options)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"{unknown[0]!r} is not a {self.name} option. {self.options.__name__} takes "
                f"{sorted(known)}."
            )
        return self.options(**values)


_REGISTRY = {}


def register_task(spec):
    """Adds `spec` (a `TaskSpec`) to the registry and returns it; its model class
    gets `task_name` and, when the spec names one, its `serving_module_class`."""
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
    if name not in _REGISTRY:
        source = f"{where} names" if where else "Received"
        raise ValueError(
            f"{source} an unknown task {name!r}. Known tasks: {task_names()}."
        )
    return _REGISTRY[name]
