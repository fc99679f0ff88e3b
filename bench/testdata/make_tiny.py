#!/usr/bin/env python3
"""Writes tiny.cgcgraph.gz and tiny-badcount.cgcgraph.gz, the graphs the
replay's tests use: a few dozen nodes with live cycles, garbage cycles,
acyclic garbage (freed as soon as the graph is built), garbage hanging off
cycles, duplicate and self references, and a root held twice.

The stats comment (roots, garbage) is computed here, independently of the
replay's C++ model; tiny-badcount states a wrong garbage count on purpose.
Deterministic: run it again and the files are byte-identical."""
import gzip
import io
import os
import random
import sys

# node: (external, [references])
nodes = {
    0: (1, [1, 2]),          # root holding the 2-cycle 1 <-> 2
    1: (0, [2]),
    2: (0, [1, 1]),          # duplicate reference
    3: (2, [3, 4]),          # root held twice, self reference
    4: (0, []),              # live leaf
    5: (0, [6]),             # garbage 3-cycle 5 -> 6 -> 7 -> 5 ...
    6: (0, [7]),
    7: (0, [5, 8]),          # ... with 8 hanging off it
    8: (0, [4]),             # garbage that refers to a live node
    9: (0, [9]),             # garbage self-cycle
    10: (0, [11, 0]),        # acyclic garbage: nothing refers to 10
    11: (0, [12]),
    12: (0, []),
    13: (0, [5]),            # acyclic garbage pointing into a garbage cycle
    14: (1, [15]),           # a live cycle through a root: 14 -> 15 -> 16 -> 17 -> 14
    15: (0, [16]),
    16: (0, [17]),
    17: (0, [14, 18]),
    18: (0, []),
    30: (0, [31]),           # garbage 2-cycles
    31: (0, [30]),
    32: (0, [33]),
    33: (0, [32, 34]),
    34: (0, []),             # acyclic, but held by a garbage cycle: freed by the collection
    35: (0, [36]),           # acyclic garbage holding a garbage cycle
    36: (0, [37]),
    37: (0, [36]),
}
# 19..29: a small random live tangle under root 19.
rng = random.Random(7)
for i in range(19, 30):
    refs = [rng.randrange(19, 30) for _ in range(rng.randrange(0, 4))]
    if i < 29:
        refs.append(i + 1)  # keep all of them reachable from 19
    nodes[i] = (1 if i == 19 else 0, refs)

n = len(nodes)
assert sorted(nodes) == list(range(n))
edges = sum(len(r) for _, r in nodes.values())


def reachable():
    seen = set()
    stack = [i for i, (ext, _) in nodes.items() if ext > 0]
    seen.update(stack)
    while stack:
        for t in nodes[stack.pop()][1]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return seen


def acyclic_garbage():
    rc = {i: ext for i, (ext, _) in nodes.items()}
    for _, refs in nodes.values():
        for t in refs:
            rc[t] += 1
    freed, stack = set(), [i for i in nodes if rc[i] == 0]
    while stack:
        x = stack.pop()
        freed.add(x)
        for t in nodes[x][1]:
            rc[t] -= 1
            if rc[t] == 0:
                stack.append(t)
    return freed


roots = sum(1 for ext, _ in nodes.values() if ext > 0)
garbage = n - len(reachable())
acyclic = len(acyclic_garbage())


def write(path, stated_garbage):
    lines = ["cgcgraph 1", f"nodes {n} edges {edges}",
             "# tiny test graph, made by bench/testdata/make_tiny.py",
             f"# stats: nodes={n} edges={edges} roots={roots} garbage={stated_garbage} acyclic_garbage={acyclic}"]
    for i in range(n):
        ext, refs = nodes[i]
        lines.append(" ".join(map(str, ["list", 56 + 8 * len(refs), ext, len(refs), *refs])))
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(("\n".join(lines) + "\n").encode())
    with open(path, "wb") as f:
        f.write(raw.getvalue())


here = os.path.dirname(os.path.abspath(__file__))
write(os.path.join(here, "tiny.cgcgraph.gz"), garbage)
write(os.path.join(here, "tiny-badcount.cgcgraph.gz"), garbage + 1)
print(f"tiny: {n} nodes, {edges} edges, {roots} roots, {garbage} garbage ({acyclic} acyclic)", file=sys.stderr)
