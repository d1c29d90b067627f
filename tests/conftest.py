"""Every test starts from the same tensorplay random stream, so a failure that
depends on random inputs (tp.rand, gradgradcheck's default cotangents) replays.

The fuzzer (test_fuzz.py) counts its examples in ``fuzz_stats``; the count is
printed at the end of the run."""
import pytest

import tensorplay as tp

FUZZ_STATS = pytest.StashKey[dict]()


@pytest.fixture(autouse=True)
def _seed_tensorplay():
    tp.manual_seed(0)
    yield


def pytest_configure(config):
    config.stash[FUZZ_STATS] = {"examples": 0, "valid": 0, "invalid": 0, "rows": set(),
                                "inplace": set(), "crashes": 0, "mismatches": 0}


@pytest.fixture(scope="session")
def fuzz_stats(request):
    """The run's fuzz counters: examples, valid/invalid draws, rows (and in-place
    methods) fuzzed, crashes (an unexpected exception, or none where one was due)
    and mismatches (a wrong value or derivative, or an input changed by a call
    that raised)."""
    return request.config.stash[FUZZ_STATS]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """At the end of the run: how much fuzzing happened and what it found."""
    s = config.stash.get(FUZZ_STATS, None)
    if not s or not s["examples"]:
        return
    terminalreporter.write_line(
        f"fuzz: {s['examples']} examples ({s['valid']} valid, {s['invalid']} invalid) over "
        f"{len(s['rows'])} op-table rows"
        + (f" and {len(s['inplace'])} in-place methods" if s["inplace"] else "")
        + f", {s['crashes']} crashes, "
        f"{s['mismatches']} mismatches"
        + _failed_fuzz_tests(terminalreporter))


def _failed_fuzz_tests(terminalreporter):
    """', N fuzz tests FAILED' when a fuzz test failed in a way the counters do not
    classify (an error in the harness, say), so the line never reads as clean."""
    failed = [r for r in terminalreporter.stats.get("failed", [])
              if "test_fuzz.py" in getattr(r, "nodeid", "")]
    return f", {len(failed)} fuzz tests FAILED (see above)" if failed else ""


@pytest.fixture
def register_op():
    """Register throwaway primitives (``register(forward, vjp, jvp, saves)`` returns
    a function applying it); they leave the REGISTRY on teardown, since other
    tests iterate it."""
    import uuid

    from tensorplay._ops import registry
    names = []

    def register(forward, vjp, jvp, saves=("inputs",)):
        name = f"_test_op_{uuid.uuid4().hex}"
        op = registry.defop(name, forward, vjp=vjp, jvp=jvp, saves=saves)
        names.append(name)
        return lambda *xs: registry.apply(op, xs, {})

    yield register
    for name in names:
        registry.REGISTRY.pop(name, None)
    assert not any(n in registry.REGISTRY for n in names)
