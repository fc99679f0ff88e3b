#!/usr/bin/env python3
"""Thins pause logs (pauses.cpp --pause-log) into gnuplot data for plot_pauses.sh.

    plot_pauses.py LOG... --out DIR

For each LOG (one line per pause: "end_s ms kind") writes DIR/NAME.ccdf (pause
length, fraction of pauses at least that long, at about 25 lengths per
decade) and DIR/NAME.time (the longest pause in each of 300 equal spans of
the run: its end in s and its length in ms), NAME being LOG's base name
without its extension: a few hundred points per run, whatever its pauses.
"""
import argparse
import bisect
import math
import os

SPANS = 300
STEPS_PER_DECADE = 25


def read_log(path):
    pauses = []
    with open(path) as f:
        for line in f:
            end_s, ms, _kind = line.split()
            pauses.append((float(end_s), float(ms)))
    return pauses


def write_ccdf(lengths, path):
    lengths = sorted(lengths)
    n = len(lengths)
    low = math.floor(math.log10(max(lengths[0], 1e-4)) * STEPS_PER_DECADE)
    high = math.ceil(math.log10(lengths[-1]) * STEPS_PER_DECADE)
    with open(path, "w") as out:
        for step in range(low, high + 1):
            x = 10 ** (step / STEPS_PER_DECADE)
            at_least = n - bisect.bisect_left(lengths, x)
            if at_least:
                out.write(f"{x:.6g} {at_least / n:.6g}\n")
        out.write(f"{lengths[-1]:.6g} {1 / n:.6g}\n")  # (the longest)


def write_time(pauses, path):
    end = max(t for t, _ in pauses) or 1.0
    longest = {}
    for t, ms in pauses:
        span = min(int(t / end * SPANS), SPANS - 1)
        if ms > longest.get(span, (0, 0))[1]:
            longest[span] = (t, ms)
    with open(path, "w") as out:
        for span in sorted(longest):
            out.write("%.4f %.6g\n" % longest[span])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    for log in args.logs:
        pauses = read_log(log)
        if not pauses:
            continue
        name = os.path.splitext(os.path.basename(log))[0]
        write_ccdf([ms for _, ms in pauses], os.path.join(args.out, name + ".ccdf"))
        write_time(pauses, os.path.join(args.out, name + ".time"))


if __name__ == "__main__":
    main()
