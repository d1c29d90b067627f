"""What ``import tensorplay`` costs over ``import numpy``, in fresh processes.

Each round starts one interpreter that imports numpy and one that imports
tensorplay (in alternating order), each timing its import with
``time.perf_counter`` around the import statement, so interpreter start-up is
left out.  tensorplay imports numpy itself, so the per-round difference is what
tensorplay adds.  Prints the medians and the slowest modules tensorplay pulls in
beyond numpy (self time from ``python -X importtime``, median over rounds).

    python benchmarks/compare_import.py [--rounds 41]

Bytecode: the interpreters run without PYTHONDONTWRITEBYTECODE, so the ``.pyc``
files a normal install has exist after the warm-up round (an editable install
writes them beside the sources on first import).
"""
import argparse
import os
import statistics
import subprocess
import sys

SNIPPET = ("import time; t = time.perf_counter(); import {mod}; "
           "print(time.perf_counter() - t)")


def _env():
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _time_import(mod, env):
    out = subprocess.run([sys.executable, "-c", SNIPPET.format(mod=mod)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def _self_times(mod, env):
    """{module: self time in µs} from one ``-X importtime`` run."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {mod}"],
                         env=env, check=True, capture_output=True, text=True).stderr
    times = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cum, name = line[len("import time:"):].split("|")
        times[name.strip()] = int(self_us)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    env = _env()
    for mod in ("numpy", "tensorplay"):            # warm-up: writes .pyc, fills caches
        _time_import(mod, env)
    np_t, tp_t, diff = [], [], []
    for r in range(args.rounds):
        order = ("numpy", "tensorplay") if r % 2 == 0 else ("tensorplay", "numpy")
        got = {mod: _time_import(mod, env) for mod in order}
        np_t.append(got["numpy"])
        tp_t.append(got["tensorplay"])
        diff.append(got["tensorplay"] - got["numpy"])
    ms = 1e3
    print(f"{args.rounds} alternating rounds, medians:")
    print(f"  import numpy       {statistics.median(np_t) * ms:7.1f} ms")
    print(f"  import tensorplay  {statistics.median(tp_t) * ms:7.1f} ms")
    print(f"  difference         {statistics.median(diff) * ms:7.1f} ms "
          f"(quartiles {statistics.quantiles(diff, n=4)[0] * ms:.1f} .. "
          f"{statistics.quantiles(diff, n=4)[2] * ms:.1f})")

    runs = max(5, min(args.rounds, 11))
    base = set(_self_times("numpy", env))
    per_mod = {}
    for _ in range(runs):
        for name, us in _self_times("tensorplay", env).items():
            if name not in base:
                per_mod.setdefault(name, []).append(us)
    extra = sorted(((statistics.median(v), k) for k, v in per_mod.items()), reverse=True)
    total = sum(us for us, _ in extra)
    print(f"\nmodules beyond numpy's: {len(extra)}, self times sum to {total / 1e3:.1f} ms "
          f"(-X importtime, median of {runs}); slowest:")
    for us, name in extra[:args.top]:
        print(f"  {us / 1e3:6.2f} ms  {name}")


if __name__ == "__main__":
    main()
