#!/bin/bash
# Runs each program ROUNDS times in turn with ARGS (interleaved, so that the
# machine's drift hits each alike) and prints the median of what each printed.
#   ab.sh ROUNDS "ARGS" PROGRAM...
rounds=$1 args=$2; shift 2
for r in $(seq $rounds); do for b in "$@"; do echo "$b $($b $args)"; done; done | python3 -c '
import sys,statistics,collections
d=collections.defaultdict(list)
for l in sys.stdin:
  b,v=l.split(); d[b].append(float(v))
for b,v in d.items(): print(b, "median %.2f min %.2f max %.2f" % (statistics.median(v),min(v),max(v)))'
