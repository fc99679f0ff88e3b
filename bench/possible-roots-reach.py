#!/usr/bin/env python3
"""How much of a live heap a possible-roots collection would have to examine.

A possible-roots buffer (Bacon and Rajan's "purple" candidates: objects whose
count was decremented to non-zero) lets a collection start from those objects
only: any garbage cycle has one. But trial deletion must then traverse every
object the candidates reach. This script takes a heap graph, drops a share of
its live edges at random (as the replay's churn step does), and reports how
many live nodes the old targets of those edges reach.

    bench/possible-roots-reach.py GRAPH.cgcgraph.gz ... [--shares 0.001,0.01,0.1]

(Approximation: the edges are not redirected, so it reports the reach in the
graph before the churn; a churn that adds random edges only reaches further.)
"""
import argparse
import gzip
import random
from collections import deque


def load(path):
    targets, external = [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            if not line.strip() or line.startswith(("#", "cgcgraph", "nodes ")):
                continue
            fields = line.split()
            external.append(int(fields[2]))
            k = int(fields[3])
            targets.append([int(x) for x in fields[4:4 + k]])
    return targets, external


def reach(targets, starts):
    seen = bytearray(len(targets))
    queue = deque()
    for s in starts:
        if not seen[s]:
            seen[s] = 1
            queue.append(s)
    while queue:
        for m in targets[queue.popleft()]:
            if not seen[m]:
                seen[m] = 1
                queue.append(m)
    return seen


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--shares", default="0.001,0.01,0.1")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for path in args.graphs:
        targets, external = load(path)
        live = reach(targets, [i for i, e in enumerate(external) if e > 0])
        live_count = sum(live)
        edges = [(i, j) for i in range(len(targets)) if live[i] for j in range(len(targets[i]))]
        rng = random.Random(args.seed)
        name = path.rsplit("/", 1)[-1].removesuffix(".cgcgraph.gz")
        for share in (float(s) for s in args.shares.split(",")):
            picked = rng.sample(edges, int(len(edges) * share))
            candidates = {targets[i][j] for i, j in picked}
            reached = sum(reach(targets, candidates))
            print(f"{name}: {live_count} live nodes; {share:.1%} of live edges dropped -> "
                  f"{len(candidates)} candidates reach {reached} ({reached / live_count:.0%} of the live heap)")


if __name__ == "__main__":
    main()
