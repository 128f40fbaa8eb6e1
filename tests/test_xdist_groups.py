"""tools/test.sh's pytest-xdist workers keep a module's tests in one worker (`--dist
loadgroup`, each module its own group: tests/conftest.py), so a module's fixtures are built
once. pytest 9.2 broke that without an error (setup.cfg pins pytest below it)."""

import os

import pytest


@pytest.fixture(scope="module")
def workers():
    """The worker of each test of this module so far, in order."""
    return []


@pytest.mark.parametrize("index", range(4))
def test_a_module_runs_in_one_worker_in_order(workers, index):
    workers.append(os.environ.get("PYTEST_XDIST_WORKER", "no xdist"))
    # Spread over two workers, a worker's module fixture misses the other's tests.
    assert len(workers) == index + 1, workers
    assert len(set(workers)) == 1, workers
