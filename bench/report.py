#!/usr/bin/env python3
"""Turns benchmark output into the tables of BENCHMARKS.md and the data
files bench/plot.sh plots.

    bench/report.py --micro micro.json [--replay replay.jsonl] [--dat DIR] [--markdown]
    bench/report.py --across RUN.jsonl...

--micro:  cyclegc_bench --benchmark_out=micro.json --benchmark_out_format=json
          (with --benchmark_repetitions=N: the medians are used)
--replay: cyclegc-replay --json --cpython [--boehm] ... > replay.jsonl
--dat:    write full_collect.dat, young_collect.dat, replay.dat there
--markdown: print the tables and the target checks
--across: replay runs of the same graphs (fresh or --aged, interleaved):
          a table of medians per graph, layout and step, the ratios' ranges
          across the runs, and CPython over the floor (where CPython takes
          less than 5x the floor, a collection 5x faster than CPython would
          have to beat the floor)"""
import argparse
import json
import os
import statistics
import sys

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def load_micro(path):
    """{run_name: cpu ns per iteration}, medians when there are aggregates."""
    with open(path) as f:
        data = json.load(f)
    plain, medians = {}, {}
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"])
        # Manual-time benchmarks report the timed part as real_time.
        key = "real_time" if name.endswith("/manual_time") else "cpu_time"
        ns = b[key] * UNIT_NS[b.get("time_unit", "ns")]
        name = name.replace("/manual_time", "")
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = ns
        else:
            plain.setdefault(name, []).append(ns)
    out = {k: sorted(v)[len(v) // 2] for k, v in plain.items()}
    out.update(medians)
    return out, data.get("context", {})


def load_replay(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def series(micro, prefix, api):
    """[(size, ns)] for names like prefix/api/heap:N or prefix/api/old:N."""
    out = []
    for name, ns in micro.items():
        parts = name.split("/")
        if len(parts) == 3 and parts[0] == prefix and parts[1] == api:
            out.append((int(parts[2].split(":")[1]), ns))
    return sorted(out)


def fmt(x, digits=1):
    if x is None:
        return "-"
    return f"{x:.{digits}f}"


def verdict(ok):
    return "**met**" if ok else "**not met**"


REAL = ("stdlib-import", "test-garbage")
STEPS = [("build", "build_ns_per_node", "build (alloc + track + link)"),
         ("collect_garbage", "collect_garbage_ns_per_node", "full collection: the graph's garbage"),
         ("collect_live", "collect_live_ns_per_node", "full collection, every root held"),
         ("churn", "churn_ns_per_rewrite", "churn: one edge rewrite (ns per rewrite)"),
         ("churn_collect", "churn_collect_ns_per_node", "full collection after the churn"),
         ("drop_and_collect", "drop_and_collect_ns_per_node", "drop every root + full collection")]


def markdown(micro, replay):
    out = []
    checks = []
    if replay:
        out.append("### Replays (ns per node; median of %s runs; thread CPU time)\n" % replay[0].get("repeat"))
        out.append("| graph | nodes | live | garbage | step | cyclegc | CPython | CPython / cyclegc | Boehm | floor |")
        out.append("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
        for r in replay:
            cg, cp, bw = r["cyclegc"], r.get("cpython", {}), r.get("boehm", {})
            for i, (step, key, label) in enumerate(STEPS):
                a, b = cg.get(key), cp.get(key)
                ratio = b / a if a and b else None
                boehm = bw.get(key) if step in ("build", "collect_live", "drop_and_collect") else None
                floor = {"collect_live": r["floor"].get("mark_ns_per_node"),
                         "churn_collect": r["floor"].get("after_churn_mark_ns_per_node")}.get(step)
                head = [r["graph"], f"{r['nodes']:,}", f"{r['live']:,}", f"{r['garbage']:,}"] if i == 0 else ["", "", "", ""]
                out.append("| " + " | ".join(head + [label, fmt(a), fmt(b), fmt(ratio, 2), fmt(boehm), fmt(floor, 2)]) + " |")
            mem = [cg.get("rss_bytes_per_node"), cp.get("rss_bytes_per_node")]
            out.append("| | | | | bytes per node (RSS growth; malloc in use) | %s (%s) | %s | %s | %s | |" % (
                fmt(mem[0]), fmt(cg.get("malloc_bytes_per_node")), fmt(mem[1]),
                fmt(mem[1] / mem[0], 2) if mem[0] and mem[1] else "-", fmt(bw.get("gc_heap_bytes_per_node"))))
        out.append("")
        out.append("Objects freed at each step (identical for cyclegc and CPython, and equal to the graph's model):\n")
        out.append("| graph | build | collect garbage | collect, roots held | churn | collect after churn | drop roots | final collect |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in replay:
            f = r["cyclegc"]["freed"]
            out.append("| %s | %s |" % (r["graph"], " | ".join(f"{f[k]:,}" for k in (
                "build", "collect_garbage", "collect_live", "churn", "churn_collect", "drop", "drop_collect"))))
        out.append("")
        for r in replay:
            if r["graph"] not in REAL or "cpython" not in r:
                continue
            cg, cp = r["cyclegc"], r["cpython"]
            for key, floor_key, when in (("collect_live", "mark_ns_per_node", "roots held"),
                                         ("churn_collect", "after_churn_mark_ns_per_node", "after the churn")):
                ratio = cp[key + "_ns_per_node"] / cg[key + "_ns_per_node"]
                checks.append((f"full collection of a live real heap ({r['graph']}, {when}): >= 5x fewer ns/node than CPython",
                               f"{ratio:.2f}x", ratio >= 5))
                if r["floor"].get(floor_key):
                    over_floor = cg[key + "_ns_per_node"] / r["floor"][floor_key]
                    checks.append((f"full collection of a live real heap ({r['graph']}, {when}): <= 3x the floor",
                                   f"{over_floor:.2f}x the floor", over_floor <= 3))
            d = cp["drop_and_collect_ns_per_node"] / cg["drop_and_collect_ns_per_node"]
            checks.append((f"drop every root and collect ({r['graph']}): >= 3x faster than CPython per node",
                           f"{d:.2f}x", d >= 3))
    if micro:
        def get(name):
            return micro.get(name)
        out.append("### Micro-benchmarks (CPU ns per operation; median of the repetitions)\n")
        out.append("| benchmark | cyclegc | CPython 3.11 (same C code) | CPython / cyclegc |")
        out.append("|---|---:|---:|---:|")
        old = None
        for name in sorted(micro):
            if name.startswith("cycle_loop_old_heap/cyclegc/"):
                old = name.split("/")[2]
        rows = [("acyclic allocate + track + release", "acyclic_alloc_track_release/cyclegc",
                 "acyclic_alloc_track_release/cpython"),
                ("2-cycle loop, automatic collection on", "cycle_loop/cyclegc", "cycle_loop/cpython")]
        if old:
            rows.append((f"2-cycle loop with a live old heap ({old.split(':')[1]} objects)",
                         f"cycle_loop_old_heap/cyclegc/{old}", f"cycle_loop_old_heap/cpython/{old}"))
        rows.append(("incref + decref", "incref_decref/cyclegc", "incref_decref/cpython"))
        for label, a, b in rows:
            x, y = get(a), get(b)
            out.append(f"| {label} | {fmt(x, 2)} | {fmt(y, 2)} | {fmt(y / x if x and y else None, 2)} |")
        out.append("")
        out.append("| C++ | cyclegc | standard library | cyclegc / std |")
        out.append("|---|---:|---:|---:|")
        for label, a, b in [("make + release (`cyclegc::make` vs `std::make_shared`)",
                             "cpp_make_release/cyclegc::make", "cpp_make_release/std::make_shared"),
                            ("copy a reference (`ref<T>` vs `shared_ptr<T>`)", "cpp_copy/cyclegc::ref",
                             "cpp_copy/std::shared_ptr")]:
            x, y = get(a), get(b)
            out.append(f"| {label} | {fmt(x, 2)} | {fmt(y, 2)} | {fmt(x / y if x and y else None, 2)} |")
        out.append("")
        full = {api: dict(series(micro, "full_collect", api)) for api in ("cyclegc", "cpython", "floor")}
        out.append("Full collection of a live heap (a binary tree), ns per object:\n")
        out.append("| objects | cyclegc | CPython | floor | CPython / cyclegc | cyclegc / floor |")
        out.append("|---:|---:|---:|---:|---:|---:|")
        for n in sorted(full["cyclegc"]):
            a, b, c = (full[k].get(n) for k in ("cyclegc", "cpython", "floor"))
            a, b, c = (v / n if v else None for v in (a, b, c))
            out.append(f"| {n:,} | {fmt(a, 2)} | {fmt(b, 2)} | {fmt(c, 2)} | {fmt(b / a if a and b else None, 2)} | "
                       f"{fmt(a / c if a and c else None, 2)} |")
        out.append("")
        young = {api: dict(series(micro, "young_collect", api)) for api in ("cyclegc", "cpython")}
        out.append("Young collection of 1,000 new objects (500 garbage 2-cycles pointing into the old heap), "
                   "µs, against the old heap's size:\n")
        out.append("| old heap | cyclegc | CPython |")
        out.append("|---:|---:|---:|")
        for n in sorted(young["cyclegc"]):
            a, b = young["cyclegc"].get(n), young["cpython"].get(n)
            out.append(f"| {n:,} | {fmt(a / 1e3 if a else None, 1)} | {fmt(b / 1e3 if b else None, 1)} |")
        out.append("")
        x, y = get("cycle_loop/cyclegc"), get("cycle_loop/cpython")
        if x and y:
            checks.append(("2-cycle loop: >= 3x faster than the same C code against CPython", f"{y / x:.2f}x", y / x >= 3))
        if old and x:
            z = get(f"cycle_loop_old_heap/cyclegc/{old}")
            checks.append((f"2-cycle loop with the {old.split(':')[1]}-object old heap: at most 1.3x slower than without",
                           f"{z / x:.2f}x", z / x <= 1.3))
        x, y = get("acyclic_alloc_track_release/cyclegc"), get("acyclic_alloc_track_release/cpython")
        if x and y:
            checks.append(("acyclic allocate + track + release: >= 1.5x faster than CPython", f"{y / x:.2f}x", y / x >= 1.5))
        x, y = get("cpp_make_release/cyclegc::make"), get("cpp_make_release/std::make_shared")
        if x and y:
            checks.append(("C++ make + release no slower than make_shared + release", f"{x / y:.2f}x the time", x <= y))
        x, y = get("cpp_copy/cyclegc::ref"), get("cpp_copy/std::shared_ptr")
        if x and y:
            checks.append(("copying a ref at most half the cost of copying a shared_ptr", f"{x / y:.2f}x the time",
                           x <= 0.5 * y))
    if checks:
        out.append("### Targets\n")
        out.append("| target | measured | |")
        out.append("|---|---:|---|")
        for label, value, ok in checks:
            out.append(f"| {label} | {value} | {verdict(ok)} |")
        out.append("")
    return "\n".join(out)


def write_dat(micro, replay, directory):
    os.makedirs(directory, exist_ok=True)
    if micro:
        full = {api: dict(series(micro, "full_collect", api)) for api in ("cyclegc", "cpython", "floor")}
        with open(os.path.join(directory, "full_collect.dat"), "w") as f:
            f.write("# objects cyclegc_ns_per_object cpython_ns_per_object floor_ns_per_object\n")
            for n in sorted(full["cyclegc"]):
                vals = [full[k].get(n) for k in ("cyclegc", "cpython", "floor")]
                f.write(f"{n} " + " ".join(f"{v / n:.4f}" if v else "NaN" for v in vals) + "\n")
        young = {api: dict(series(micro, "young_collect", api)) for api in ("cyclegc", "cpython")}
        with open(os.path.join(directory, "young_collect.dat"), "w") as f:
            f.write("# old_heap cyclegc_us cpython_us\n")
            for n in sorted(young["cyclegc"]):
                vals = [young[k].get(n) for k in ("cyclegc", "cpython")]
                f.write(f"{n} " + " ".join(f"{v / 1e3:.3f}" if v else "NaN" for v in vals) + "\n")
    if replay:
        with open(os.path.join(directory, "replay.dat"), "w") as f:
            f.write("# graph cyclegc_collect_live cpython_collect_live floor cyclegc_drop cpython_drop\n")
            for r in replay:
                cg, cp = r["cyclegc"], r.get("cpython", {})
                vals = [cg["collect_live_ns_per_node"], cp.get("collect_live_ns_per_node"),
                        r["floor"]["mark_ns_per_node"], cg["drop_and_collect_ns_per_node"],
                        cp.get("drop_and_collect_ns_per_node")]
                f.write(r["graph"] + " " + " ".join(f"{v:.3f}" if v is not None else "NaN" for v in vals) + "\n")


ACROSS_STEPS = [("roots held", "collect_live_ns_per_node", "mark_ns_per_node"),
                ("after the churn", "churn_collect_ns_per_node", "after_churn_mark_ns_per_node"),
                ("drop + collect", "drop_and_collect_ns_per_node", None)]


def across(paths):
    """Medians over several replay runs, by graph, heap layout and step."""
    rows = {}
    for path in paths:
        for run in load_replay(path):
            for step, key, floor_key in ACROSS_STEPS:
                floor = run["floor"][floor_key] if floor_key else None
                rows.setdefault((run["graph"], run.get("heap", "fresh"), step), []).append(
                    (run["cyclegc"][key], run["cpython"][key], floor))

    def spread(values):
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    out = ["| graph | heap | step | cyclegc | CPython | floor | CPython / cyclegc | cyclegc / floor | CPython / floor |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for (graph, heap, step), runs in sorted(rows.items()):
        cells = [graph, heap, step, f"{statistics.median(r[0] for r in runs):.1f}",
                 f"{statistics.median(r[1] for r in runs):.1f}"]
        if runs[0][2] is None:
            cells += ["", spread([p / c for c, p, _ in runs]), "", ""]
        else:
            cells += [f"{statistics.median(r[2] for r in runs):.1f}", spread([p / c for c, p, _ in runs]),
                      f"{statistics.median(c / f for c, _, f in runs):.2f}", spread([p / f for _, p, f in runs])]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--micro")
    parser.add_argument("--replay")
    parser.add_argument("--dat")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--across", nargs="+", metavar="RUN.jsonl")
    o = parser.parse_args()
    if o.across:
        print(across(o.across))
    micro = load_micro(o.micro)[0] if o.micro else {}
    replay = load_replay(o.replay) if o.replay else []
    if o.dat:
        write_dat(micro, replay, o.dat)
    if o.markdown:
        print(markdown(micro, replay))
    return 0


if __name__ == "__main__":
    sys.exit(main())
