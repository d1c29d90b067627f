"""Every test starts from the same tensorplay random stream, so a failure that
depends on random inputs (tp.rand, gradgradcheck's default cotangents) replays."""
import pytest

import tensorplay as tp


@pytest.fixture(autouse=True)
def _seed_tensorplay():
    tp.manual_seed(0)
    yield
