"""The TensorFlow range in setup.cfg and the [tpu] extra's install check.

tools/compat.sh installs the range's other end (TF 2.20) and the [tpu] extra for
real and runs the compatibility subset there; these tests check the declared
ranges and `tpu_install_problem` on a fake site-packages.
"""

import configparser
import importlib.metadata
import os

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from keras_bert.training.distribute import tpu_install_problem, xla_cpu_available

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _requirements(section, key):
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, "setup.cfg"))
    lines = [line.strip() for line in parser[section][key].splitlines()]
    kept = (line for line in lines if line and not line.startswith("#"))
    return {r.name: r for r in map(Requirement, kept)}


BASE = _requirements("options", "install_requires")
TPU = _requirements("options.extras_require", "tpu")


@pytest.mark.parametrize("name, admitted, refused", [
    ("tensorflow", ["2.20.0", "2.21.0"], ["2.19.1", "2.22.0"]),
    ("tensorflow-text", ["2.20.1", "2.21.1", "2.21.2"], ["2.20.0", "2.21.0", "2.22.0"]),
    ("tensorboard", ["2.20.0", "2.21.0"], ["2.19.0"]),
    ("tensorflow-serving-api", ["2.20.0", "2.21.0"], ["2.19.1"]),
])
def test_the_base_range_holds_both_tested_lines(name, admitted, refused):
    spec = BASE[name].specifier
    assert [v for v in admitted if not spec.contains(v)] == []
    assert [v for v in refused if spec.contains(v)] == []


def test_the_tpu_extra_pins_the_20_line_inside_the_base_range():
    assert str(TPU["tensorflow-tpu"].specifier) == "==2.20.0"
    for name in ("tensorflow", "tensorflow-text", "tensorboard", "tensorflow-serving-api"):
        candidates = [Version(f"2.{minor}.{patch}")
                      for minor in (19, 20, 21, 22) for patch in range(3)]
        both = [v for v in candidates
                if BASE[name].specifier.contains(v) and TPU[name].specifier.contains(v)]
        assert both and {v.minor for v in both} == {20}, (name, both)
    # Newer libtpu releases (0.0.52) abort TF 2.20's import; 0.0.14 loads (tools/compat.sh).
    assert str(TPU["libtpu"].specifier) == "==0.0.14"


def _fake_site(tmp_path, framework_bytes, recorded_size, with_tpu=True):
    site = tmp_path / "site-packages"
    (site / "tensorflow").mkdir(parents=True)
    (site / "tensorflow" / "libtensorflow_framework.so.2").write_bytes(b"x" * framework_bytes)
    if with_tpu:
        info = site / "tensorflow_tpu-2.20.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: tensorflow_tpu\nVersion: 2.20.0\n")
        (info / "RECORD").write_text(
            f"tensorflow/libtensorflow_framework.so.2,sha256=unused,{recorded_size}\n"
            "tensorflow_tpu-2.20.0.dist-info/METADATA,,\n")
    return [str(site)]


def test_a_tpu_install_whose_files_are_its_own_passes(tmp_path):
    assert tpu_install_problem(path=_fake_site(tmp_path, 7, 7)) is None


def test_tensorflow_installed_over_tensorflow_tpu_is_named_with_the_fix(tmp_path):
    problem = tpu_install_problem(path=_fake_site(tmp_path, 9, 7))
    assert problem is not None
    assert "9 bytes, its RECORD says 7" in problem
    assert "pip install --force-reinstall --no-deps tensorflow-tpu==2.20.0" in problem


def test_no_tensorflow_tpu_names_the_extra(tmp_path):
    problem = tpu_install_problem(path=_fake_site(tmp_path, 7, 7, with_tpu=False))
    assert "no `tensorflow-tpu` distribution" in problem
    assert "bert-keras3[tpu]" in problem


def _tpu_build():
    """True where tensorflow-tpu is installed (tools/compat.sh's [tpu] venv)."""
    try:
        importlib.metadata.distribution("tensorflow-tpu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_this_install():
    """Here: the `tensorflow` wheel, so the check must say so; in tools/compat.sh's
    [tpu] venv (after its reinstall) it must find nothing wrong."""
    problem = tpu_install_problem()
    if _tpu_build():
        assert problem is None, problem
    else:
        assert problem is not None and "bert-keras3[tpu]" in problem


def test_xla_for_the_cpu_follows_the_build():
    """The `tensorflow` wheel compiles XLA for the CPU; tensorflow-tpu's build cannot
    (tools/compat.sh tpu runs this there), and pretraining's jit "auto" follows."""
    import tensorflow as tf

    from keras_bert.training.pretrain import resolve_jit_compile

    tpu_build = _tpu_build()
    assert xla_cpu_available() is (not tpu_build)
    default = tf.distribute.get_strategy()
    assert resolve_jit_compile("auto", "float32", default, amx=False) is (not tpu_build)
