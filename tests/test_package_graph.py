"""Imports run one way (DESIGN.md): config <- layers <- text <- models <-
(data, training, checkpoints, export) <- tasks; no cycle between packages."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "keras_bert"
RANK = {"_lazy": 0, "config": 0, "progress": 0, "names": 0, "steps": 0, "staging": 0, "storage": 0, "files": 0, "sources": 0, "cli": 0, "layers": 1, "text": 2, "models": 3, "data": 4, "training": 4,
        "checkpoints": 4, "export": 4, "tasks": 5}


def _package(module):
    """keras_bert.models.task -> "models"; keras_bert.config -> "config"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _imports():
    """{(importing package, imported package): first file:line}, for keras_bert modules."""
    edges = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(relative.parts)
        if module in ("keras_bert.__init__",) or module.startswith("keras_bert._"):
            continue
        source = _package(module.removesuffix(".__init__"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                target = _package(name) if name.startswith("keras_bert.") else None
                if target and target != source:
                    edges.setdefault((source, target), f"{relative}.py:{node.lineno}")
    return edges


def test_every_package_has_a_rank():
    packages = {p.name.removesuffix(".py") for p in ROOT.iterdir()
                if not p.name.startswith("_") and (p.suffix == ".py" or p.is_dir())}
    packages.discard("__pycache__")
    assert packages <= set(RANK), f"Give {packages - set(RANK)} a rank in this test."


def test_no_upward_import():
    upward = {f"{where}: {src} imports {dst}" for (src, dst), where in _imports().items()
              if RANK[dst] > RANK[src]}
    assert not upward, "\n".join(sorted(upward))


def test_no_cycle_between_packages():
    graph = {}
    for src, dst in _imports():
        graph.setdefault(src, set()).add(dst)

    def reaches(start, goal, seen=()):
        return any(n == goal or (n not in seen and reaches(n, goal, seen + (n,)))
                   for n in graph.get(start, ()))

    cycles = sorted(p for p in graph if reaches(p, p))
    assert not cycles, f"Packages in an import cycle: {cycles}"


def _sibling_task_imports(root=ROOT):
    """["FILE:LINE: tasks/A imports tasks/B"] for a task folder importing another.

    Absolute (`keras_bert.tasks.B...`), package-level (`from keras_bert.tasks
    import X`, which runs every task's __init__) and relative (`from ..B
    import x`) imports all count. Shared code belongs in data/ or models/.
    """
    tasks = root / "tasks"
    found = []
    for path in sorted(tasks.rglob("*.py")):
        parts = path.relative_to(tasks).parts
        if len(parts) < 2:
            continue  # tasks/__init__.py gathers the folders: not a task itself.
        folder = parts[0]
        package = ["keras_bert", "tasks", *parts[:-1]]  # The package the file sits in.
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                names = [f"{module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                pieces = name.split(".")
                if pieces[:2] != ["keras_bert", "tasks"]:
                    continue
                target = pieces[2] if len(pieces) > 2 else None
                if target != folder:
                    where = f"{path.relative_to(root.parent)}:{node.lineno}"
                    found.append(f"{where}: tasks/{folder} imports {name}")
    return found


def test_no_task_folder_imports_a_sibling_task():
    siblings = _sibling_task_imports()
    assert not siblings, "Move shared code to data/ or models/:\n" + "\n".join(siblings)


def test_sibling_task_check_catches_each_import_form(tmp_path):
    root = tmp_path / "keras_bert"
    folder = root / "tasks" / "tagging"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from keras_bert.tasks.tagging import reader\n")
    (folder / "reader.py").write_text(
        "from keras_bert.data.text_data import read_lines\n"
        "from keras_bert.tasks.classification.reader import read_lines\n"
        "import keras_bert.tasks.span_qa.windows\n"
        "from keras_bert.tasks import BertClassifier\n"
        "from ..classification import reader\n"
        "from . import model\n")
    assert [line.split(": ", 1)[1] for line in _sibling_task_imports(root)] == [
        "tasks/tagging imports keras_bert.tasks.classification.reader.read_lines",
        "tasks/tagging imports keras_bert.tasks.span_qa.windows",
        "tasks/tagging imports keras_bert.tasks.BertClassifier",
        "tasks/tagging imports keras_bert.tasks.classification.reader",
    ]
