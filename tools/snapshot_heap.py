#!/usr/bin/env python3
"""Snapshot a Python program's heap as a `cgcgraph 1` heap graph.

The graph (docs/graph-format.md) is what CPython's cycle collector sees:
one node per object it tracks, one edge per reference between two tracked
objects, and for every node the references that come from outside the graph.
Replay it with `cyclegc-replay FILE --cpython` to see how cyclegc would do on
that heap.

Two ways to use it:

    python3 tools/snapshot_heap.py [--no-check] program.py out.cgcgraph.gz [args...]

runs the program (as __main__, with sys.argv = [program.py, args...]), then
snapshots the heap it left: its module globals and everything they reach,
plus its garbage (gc is not run before the snapshot). Or, from inside a
running program:

    import snapshot_heap
    stats = snapshot_heap.snapshot("out.cgcgraph.gz")

How (the format's own recipe):
- nodes: gc.get_objects() (all generations; frozen objects are not nodes,
  so references from them count as external, as in a full collection);
- edges: gc.get_referents(o) restricted to the nodes, in tp_traverse order,
  duplicates kept;
- external: sys.getrefcount(o) minus the references from other nodes, minus
  the snapshot's own temporary references (measured on a probe object that
  goes through exactly the same code). This is the `gc_refs` CPython's
  update_refs()/subtract_refs() compute, so "unreachable from the roots" is
  what a full gc.collect() would find unreachable.
- check (on by default): the snapshot drops its references, runs
  gc.collect() with gc.DEBUG_SAVEALL and compares the unreachable objects
  it finds with the graph's garbage: `collect_check=exact` when the two sets
  of snapshot nodes are equal. Side effect: the program's cyclic garbage is
  collected (pass check=False / --no-check to leave it).

Automatic collection is disabled while the snapshot is taken. Other threads
that run meanwhile can make it inexact (the stats line says how many there
were)."""

import gc
import gzip
import os
import re
import sys
import threading
import time
import types

__all__ = ["snapshot"]

# The C-level __sizeof__ implementations: sys.getsizeof() of objects whose
# type has another (a Python method) would run Python code mid-snapshot.
_C_LEVEL = (types.MethodDescriptorType, types.WrapperDescriptorType, types.BuiltinFunctionType)
_GC_HEAD = 16  # sizeof(PyGC_Head), what sys.getsizeof adds for GC objects
_IMMORTAL = 1 << 30  # refcounts from here on are CPython 3.12+'s immortal objects


def _refcounts(objs):
    # The probe and the nodes go through this same function, so the
    # temporaries it holds (list slot, loop variable, argument) cancel out.
    getrefcount = sys.getrefcount
    return [getrefcount(o) for o in objs]


def _edges(objs, index):
    get_referents = gc.get_referents
    lookup = index.get
    edges = []
    for o in objs:
        edges.append([j for j in map(lookup, map(id, get_referents(o))) if j is not None])
    return edges


def _sizes_and_types(objs):
    python_level = {}
    avoided = 0
    getsizeof = sys.getsizeof
    sizes, names = [], []
    for o in objs:
        t = type(o)
        pl = python_level.get(t)
        if pl is None:
            pl = python_level[t] = not isinstance(getattr(t, "__sizeof__", None), _C_LEVEL)
        size = None
        if not pl:
            try:
                size = getsizeof(o)
            except Exception:
                size = None
        if size is None:
            avoided += 1
            try:
                size = object.__sizeof__(o) + _GC_HEAD
            except Exception:
                size = 0
        sizes.append(size)
        names.append(re.sub(r"\s", "_", t.__name__) or "?")
    return sizes, names, avoided


def _garbage(n, external, edges):
    """Nodes no root reaches."""
    seen = bytearray(n)
    stack = [i for i in range(n) if external[i] > 0]
    for i in stack:
        seen[i] = 1
    while stack:
        for j in edges[stack.pop()]:
            if not seen[j]:
                seen[j] = 1
                stack.append(j)
    return [i for i in range(n) if not seen[i]]


def _collect_check(ids, garbage):
    """Runs gc.collect() with DEBUG_SAVEALL; compares what it finds among
    the snapshot's nodes with the graph's garbage."""
    node_ids = set(ids)
    expected = {ids[i] for i in garbage}
    old_debug = gc.get_debug()
    already = len(gc.garbage)
    gc.set_debug(old_debug | gc.DEBUG_SAVEALL)
    try:
        returned = gc.collect()
        found = {id(o) for o in gc.garbage[already:]}
        del gc.garbage[already:]
    finally:
        gc.set_debug(old_debug)
    gc.collect()  # now free them for real
    missing = len(expected - found)
    extra = len((found & node_ids) - expected)
    check = "exact" if not missing and not extra else f"mismatch(missing={missing},extra={extra})"
    return returned, check, len(found - node_ids)


def snapshot(path, *, workload=None, check=True, comments=()):
    """Writes the calling process's heap to `path` (.cgcgraph.gz) and returns
    the stats as a dict (nodes, edges, roots, garbage, collect_check, ...)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _snapshot(path, workload, check, comments)
    finally:
        if was_enabled:
            gc.enable()


def _snapshot(path, workload, check, comments):
    start = time.perf_counter()
    base = _refcounts([object()])[0]  # a probe that only the list refers to
    objs = gc.get_objects()
    n = len(objs)
    index = {id(o): i for i, o in enumerate(objs)}
    edges = _edges(objs, index)
    counts = _refcounts(objs)
    indegree = [0] * n
    for refs in edges:
        for j in refs:
            indegree[j] += 1
    external, clamped, immortal = [], 0, 0
    for i in range(n):
        c = counts[i]
        if c >= _IMMORTAL:
            immortal += 1
            external.append(1)
            continue
        e = c - base - indegree[i]
        if e < 0:
            clamped += 1
            e = 0
        external.append(e)
    sizes, names, avoided = _sizes_and_types(objs)
    ids = list(index)  # ids[i] == id(objs[i])
    lines = []
    for i in range(n):
        refs = edges[i]
        lines.append(f"{names[i]} {sizes[i]} {external[i]} {len(refs)}{''.join(' %d' % j for j in refs)}")
    del objs, index, counts, sizes, names
    garbage = _garbage(n, external, edges)
    seconds = time.perf_counter() - start
    stats = {
        "nodes": n,
        "edges": sum(map(len, edges)),
        "roots": sum(1 for e in external if e > 0),
        "garbage": len(garbage),
        "negative_external_clamped": clamped,
        "immortal": immortal,
        "threads": threading.active_count(),
        "sum_external": sum(external),
        "python_level_sizeof_avoided": avoided,
        "snapshot_seconds": round(seconds, 1),
    }
    if check:
        returned, verdict, newer = _collect_check(ids, garbage)
        stats["gc_collect_returned"] = returned
        stats["garbage_made_after_snapshot"] = newer
        stats["collect_check"] = verdict
    version = ".".join(map(str, sys.version_info[:3]))
    head = ["cgcgraph 1", f"nodes {n} edges {stats['edges']}"]
    if workload:
        head.append("# workload: " + " ".join(str(workload).split()))
    head.append(f"# made by tools/snapshot_heap.py (CPython {version}, {time.strftime('%Y-%m-%d')})")
    head.append(f"# snapshot: CPython {version}, gc.get_objects() + gc.get_referents() + sys.getrefcount()")
    head.extend("# " + " ".join(str(c).split()) for c in comments)
    head.append("# stats: " + " ".join(f"{k}={v}" for k, v in stats.items()))
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6, newline="\n") as f:
        f.write("\n".join(head))
        f.write("\n")
        for k in range(0, n, 10000):
            f.write("\n".join(lines[k:k + 10000]))
            f.write("\n")
    return stats


def main(argv):
    import argparse
    import runpy

    parser = argparse.ArgumentParser(
        description="Run a Python program, then snapshot its heap as a cgcgraph 1 file.")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the gc.collect() comparison (and leave the garbage alone)")
    parser.add_argument("--workload", help="text for the '# workload:' comment")
    parser.add_argument("program", help="the Python program to run")
    parser.add_argument("output", help="where to write the .cgcgraph.gz")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")
    options = parser.parse_args(argv)
    program = os.path.abspath(options.program)
    sys.argv = [program] + options.args
    sys.path.insert(0, os.path.dirname(program))
    started = time.perf_counter()
    program_globals = None
    try:
        program_globals = runpy.run_path(program, run_name="__main__")
    except SystemExit as exit_:
        print(f"snapshot_heap: the program exited ({exit_.code!r}); snapshotting what is left",
              file=sys.stderr)
    ran = time.perf_counter() - started
    workload = options.workload or f"{os.path.basename(program)} {' '.join(options.args)}".strip()
    stats = snapshot(options.output, workload=f"{workload}; ran {ran:.1f}s", check=not options.no_check)
    del program_globals
    print("snapshot_heap: " + " ".join(f"{k}={v}" for k, v in stats.items()), file=sys.stderr)
    return 0 if stats.get("collect_check", "exact") == "exact" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
