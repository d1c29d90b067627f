"""A failing rank must end the job in bounded time (run by tests/test_distributed.py).

``raise``: rank 1 raises while rank 0 waits in all_reduce (group timeout 30 s):
the abort hook must end the job within seconds.  ``timeout``: rank 1 sleeps;
rank 0's monitored_barrier names it, then its all_reduce times out after the
group's 0.5 s, and the uncaught error aborts rank 1 too.
"""
import sys
import time
from datetime import timedelta

import tensorplay
import tensorplay.distributed as dist

mode = sys.argv[1]
if mode == "raise":
    # the user's choice, even of the default count, is kept by init_process_group
    chosen = tensorplay.get_num_threads()
    tensorplay.set_num_threads(chosen)
dist.init_process_group("mpi", timeout=timedelta(seconds=30 if mode == "raise" else 0.5))
r = dist.get_rank()
# one print: rank 1's abort may end rank 0 at any moment after init
kept = f"; kept the chosen threads: {tensorplay.get_num_threads() == chosen}" \
    if mode == "raise" else ""
print(f"rank {r} threads {tensorplay.get_num_threads()}{kept}", flush=True)
if mode == "raise":
    if r == 1:
        raise ValueError("boom from rank 1")
    dist.all_reduce(tensorplay.ones(3))
    print("rank 0 passed an all_reduce that rank 1 never joined", flush=True)
elif mode == "timeout":
    if r == 1:
        time.sleep(60)
        sys.exit(0)
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=0.5))
    except RuntimeError as e:
        print(f"monitored_barrier said: {e}", flush=True)
    dist.all_reduce(tensorplay.ones(3))
    print("rank 0 passed an all_reduce that rank 1 never joined", flush=True)
