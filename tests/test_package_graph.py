"""Imports run one way (DESIGN.md): config <- layers <- text <- models <-
(data, training, checkpoints, export) <- tasks; no two modules import each
other, directly or in a loop.

Every import form counts, wherever it stands (a function's body too):
`import keras_bert.x.y`, `from keras_bert.x import y` (a module or a name),
`from keras_bert import x`, relative imports, and
`importlib.import_module("keras_bert.x")`.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "keras_bert"
# The root package (keras_bert/__init__.py) gathers everything: it ranks above all.
RANK = {"_private_hooks": 0, "config": 0, "names": 0, "progress": 0, "steps": 0, "staging": 0,
        "storage": 0, "files": 0, "sources": 0, "layers": 1, "text": 2, "models": 3, "data": 4,
        "training": 4, "checkpoints": 4, "export": 4, "tasks": 5, "": 6}


def _modules(root):
    """{dotted module name: (path, is_package)} of every .py file under `root`."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        is_package = name.endswith(".__init__")
        found[name.removesuffix(".__init__")] = (path, is_package)
    return found


def _imported(node, module, is_package, modules):
    """The keras_bert modules that the AST `node` imports, as dotted names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")[: len(module.split(".")) + is_package - node.level]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module
        # `from package import module` imports the module; `from module import name`, the module.
        names = [f"{source}.{alias.name}" for alias in node.names]
    elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
          == "import_module" and node.args and isinstance(node.args[0], ast.Constant)):
        names = [node.args[0].value]
    else:
        return []
    found = []
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.append(name)
    return found


def import_graph(root=ROOT):
    """{module: {module it imports: "FILE:LINE" of the first such import}}."""
    modules = _modules(root)
    graph = {}
    for module, (path, is_package) in modules.items():
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _imported(node, module, is_package, modules):
                edges.setdefault(target, f"{path.relative_to(root.parent)}:{node.lineno}")
    return graph


def _package(module):
    """keras_bert.models.task -> "models"; keras_bert.config -> "config"; keras_bert -> ""."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def import_cycles(graph):
    """Each set of modules that import each other (strongly connected, 2 or more), sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(module):  # Tarjan's algorithm.
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            members = []
            while not members or members[-1] != module:
                members.append(stack.pop())
                on_stack.discard(members[-1])
            if len(members) > 1:
                cycles.append(sorted(members))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_every_package_has_a_rank():
    packages = {_package(module) for module in _modules(ROOT)}
    assert packages <= set(RANK), f"Give {packages - set(RANK)} a rank in this test."


def test_no_upward_import():
    upward = sorted(f"{where}: {source} imports {target}"
                    for source, edges in import_graph().items()
                    for target, where in edges.items()
                    if RANK[_package(target)] > RANK[_package(source)])
    assert not upward, "\n".join(upward)


def test_no_two_modules_import_each_other():
    cycles = import_cycles(import_graph())
    assert not cycles, f"Modules in an import cycle: {cycles}"


def test_the_graph_sees_every_import_form(tmp_path):
    root = tmp_path / "keras_bert"
    for name in ("__init__", "storage", "files", "text/__init__", "text/reader",
                 "models/__init__", "models/task", "models/registry"):
        (root / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (root / f"{name}.py").write_text("")
    (root / "storage.py").write_text("from keras_bert import files\n")
    (root / "files.py").write_text("def f():\n    import keras_bert.storage\n")
    (root / "text" / "reader.py").write_text("from ..models.task import BertTask\n")
    (root / "models" / "task.py").write_text("from . import registry\n")
    (root / "models" / "registry.py").write_text(
        "import importlib\nimportlib.import_module('keras_bert.text.reader')\n")
    graph = import_graph(root)
    assert graph["keras_bert.storage"] == {"keras_bert.files": "keras_bert/storage.py:1"}
    assert graph["keras_bert.files"] == {"keras_bert.storage": "keras_bert/files.py:2"}
    assert set(graph["keras_bert.text.reader"]) == {"keras_bert.models.task"}
    assert set(graph["keras_bert.models.task"]) == {"keras_bert.models.registry"}
    assert set(graph["keras_bert.models.registry"]) == {"keras_bert.text.reader"}
    assert import_cycles(graph) == [
        ["keras_bert.files", "keras_bert.storage"],
        ["keras_bert.models.registry", "keras_bert.models.task", "keras_bert.text.reader"]]


def _sibling_task_imports(root=ROOT):
    """["FILE:LINE: tasks/A imports tasks/B"] for a task folder importing another.

    Shared code belongs in data/ or models/; tasks/__init__.py gathers the
    folders and is no task itself.
    """
    found = []
    for source, edges in import_graph(root).items():
        parts = source.split(".")
        if parts[:2] != ["keras_bert", "tasks"] or len(parts) < 3:
            continue
        for target, where in edges.items():
            pieces = target.split(".")
            if pieces[:2] == ["keras_bert", "tasks"] and pieces[2:3] != parts[2:3]:
                found.append(f"{where}: tasks/{parts[2]} imports {target}")
    return sorted(found)


def test_no_task_folder_imports_a_sibling_task():
    siblings = _sibling_task_imports()
    assert not siblings, "Move shared code to data/ or models/:\n" + "\n".join(siblings)


def test_sibling_task_check_catches_each_import_form(tmp_path):
    root = tmp_path / "keras_bert"
    for name in ("__init__", "data/__init__", "data/text_data", "tasks/__init__",
                 "tasks/classification/__init__", "tasks/classification/reader",
                 "tasks/span_qa/__init__", "tasks/span_qa/windows", "tasks/tagging/__init__"):
        (root / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (root / f"{name}.py").write_text("")
    (root / "tasks" / "tagging" / "reader.py").write_text(
        "from keras_bert.data.text_data import read_lines\n"
        "from keras_bert.tasks.classification.reader import read_lines\n"
        "import keras_bert.tasks.span_qa.windows\n"
        "from keras_bert.tasks import classification\n"
        "from keras_bert.tasks import BertClassifier\n"
        "from ..span_qa import windows\n"
        "from . import model\n")
    assert [line.split(": ", 1)[1] for line in _sibling_task_imports(root)] == [
        "tasks/tagging imports keras_bert.tasks.classification.reader",
        "tasks/tagging imports keras_bert.tasks.span_qa.windows",
        "tasks/tagging imports keras_bert.tasks.classification",
        "tasks/tagging imports keras_bert.tasks",
    ]
