"""CPython's own gc.collect() on the heap a program leaves, per tracked
object: runs PROGRAM.py as __main__, collects its garbage once, then times
seven full collections of what is left (thread CPU time) and prints the
median and minimum in ns per tracked object. Beside the replays of the
same program's snapshot, it says which heap model (fresh or aged) the real
process resembles.

    /usr/bin/python3.11 bench/results/session13/real_collect.py bench/results/session13/dom_program.py
"""
import gc
import runpy
import statistics
import sys
import time

gc.disable()
program = runpy.run_path(sys.argv[1], run_name="__main__")  # (kept: its heap)
gc.collect()
tracked = len(gc.get_objects())
times = []
for _ in range(7):
    start = time.thread_time_ns()
    gc.collect()
    times.append(time.thread_time_ns() - start)
print(f"{sys.argv[1]}: {tracked} tracked objects; full collection median "
      f"{statistics.median(times) / tracked:.1f} ns, min {min(times) / tracked:.1f} ns per tracked object")
