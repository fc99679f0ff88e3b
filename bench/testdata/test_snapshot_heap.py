#!/usr/bin/env python3
"""Test of tools/snapshot_heap.py (run by CTest as bench.snapshot_heap).

1. CLI: snapshot snapshot_example.py; the file parses as `cgcgraph 1` (read
   here independently of the replay's reader); its garbage (nodes no root
   reaches) is what its stats line says; gc.collect() found exactly that set
   (collect_check=exact); and the program's own garbage is in it.
2. Library: in this process, make a controlled amount of garbage, snapshot
   with the importable function, and check the count is exact.
3. If --replay is given: cyclegc-replay replays the snapshot and its freed
   counts match (exit status 0)."""
import argparse
import gc
import gzip
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "snapshot_heap.py")


def read_graph(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    body = [l for l in lines if l and not l.startswith("#")]
    comments = [l for l in lines if l.startswith("#")]
    assert body[0] == "cgcgraph 1", body[0]
    word_nodes, n, word_edges, e = body[1].split()
    assert (word_nodes, word_edges) == ("nodes", "edges")
    n, e = int(n), int(e)
    assert len(body) == 2 + n, (len(body), n)
    external, edges = [], []
    for line in body[2:]:
        fields = line.split(" ")
        _type, size, ext, k = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
        refs = [int(x) for x in fields[4:]]
        assert len(refs) == k and size >= 0 and ext >= 0
        assert all(0 <= r < n for r in refs)
        external.append(ext)
        edges.append(refs)
    assert sum(map(len, edges)) == e
    stats = {}
    for c in comments:
        if c.startswith("# stats: "):
            stats = dict(kv.split("=", 1) for kv in c[len("# stats: "):].split())
    return n, external, edges, stats


def garbage_count(n, external, edges):
    seen = [False] * n
    stack = [i for i in range(n) if external[i] > 0]
    for i in stack:
        seen[i] = True
    while stack:
        for j in edges[stack.pop()]:
            if not seen[j]:
                seen[j] = True
                stack.append(j)
    return seen.count(False)


def check_file(path, at_least):
    n, external, edges, stats = read_graph(path)
    garbage = garbage_count(n, external, edges)
    print(f"{os.path.basename(path)}: nodes={n} garbage={garbage} stats={stats}")
    assert int(stats["nodes"]) == n
    assert int(stats["garbage"]) == garbage, (stats["garbage"], garbage)
    assert stats["collect_check"] == "exact", stats["collect_check"]
    assert garbage >= at_least, (garbage, at_least)
    return garbage


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replay", help="the cyclegc-replay binary")
    parser.add_argument("--workdir", default=None)
    options = parser.parse_args()
    workdir = options.workdir or tempfile.mkdtemp()
    os.makedirs(workdir, exist_ok=True)

    # 1. The command line, on the example program.
    out = os.path.join(workdir, "snapshot-example.cgcgraph.gz")
    subprocess.run([sys.executable, TOOL, os.path.join(HERE, "snapshot_example.py"), out], check=True)
    check_file(out, 2 * 25 + 10)

    # 2. The importable function, on a controlled example in this process.
    sys.path.insert(0, os.path.dirname(TOOL))
    import snapshot_heap

    gc.collect()
    gc.disable()
    for _ in range(40):  # 40 garbage 3-cycles of lists
        a, b, c = [], [], []
        a.append(b)
        b.append(c)
        c.append(a)
    del a, b, c
    out2 = os.path.join(workdir, "snapshot-inprocess.cgcgraph.gz")
    stats = snapshot_heap.snapshot(out2, workload="test_snapshot_heap in-process")
    gc.enable()
    assert stats["garbage"] == 120, stats  # exactly what was made: nothing else was garbage
    assert stats["collect_check"] == "exact", stats
    check_file(out2, 120)

    # 3. The replay frees exactly the graph's counts.
    if options.replay:
        for path in (out, out2):
            subprocess.run([options.replay, "--quiet", path], check=True, stdout=subprocess.DEVNULL)
    print("1 passed, 0 failed")  # one test, several checks
    return 0


if __name__ == "__main__":
    sys.exit(main())
