"""Medians over cyclegc-replay --json runs, with CPython's time over the floor's.

Where CPython takes less than 5x the floor (one explicit-stack mark over a
plain copy of the same live nodes), a collection 5x faster than CPython
would have to beat the floor.

    python3 floor_table.py RUN.jsonl...
"""
import json
import statistics as st
import sys

STEPS = [("roots held", "collect_live_ns_per_node", "mark_ns_per_node"),
         ("after the churn", "churn_collect_ns_per_node", "after_churn_mark_ns_per_node"),
         ("drop + collect", "drop_and_collect_ns_per_node", None)]

rows = {}
for path in sys.argv[1:]:
    for line in open(path):
        run = json.loads(line)
        for step, key, floor_key in STEPS:
            floor = run["floor"][floor_key] if floor_key else None
            rows.setdefault((run["graph"], run["heap"], step), []).append(
                (run["cyclegc"][key], run["cpython"][key], floor))


def spread(values):
    return f"{st.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


print("| graph | heap | step | cyclegc | CPython | floor | CPython / cyclegc | cyclegc / floor | CPython / floor |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for (graph, heap, step), runs in sorted(rows.items()):
    cyclegc = [r[0] for r in runs]
    cpython = [r[1] for r in runs]
    cells = [graph, heap, step, f"{st.median(cyclegc):.1f}", f"{st.median(cpython):.1f}"]
    if runs[0][2] is None:
        cells += ["", spread([p / c for c, p, _ in runs]), "", ""]
    else:
        cells += [f"{st.median([r[2] for r in runs]):.1f}", spread([p / c for c, p, _ in runs]),
                  f"{st.median([c / f for c, _, f in runs]):.2f}", spread([p / f for _, p, f in runs])]
    print("| " + " | ".join(cells) + " |")
