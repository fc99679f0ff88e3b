#!/usr/bin/env python3
"""The table of bench/programs/run.sh: medians per program and variant of
the result lines the programs print, and ratios against std::shared_ptr.

    bench/programs/report.py RESULTS.jsonl [--baseline shared_ptr]

The ratio is of CPU time, or of the loop's CPU time per iteration where a
program reports one (medium-cycles), or of wall time per unit where it
reports a throughput (binary-trees-mt: trees per wall second). Exits 1 if the variants of a program
disagree on its checksum (a variant computed something else), or if a line
is not a result."""
import argparse
import json
import statistics
import sys


def load(path):
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                sys.exit(f"{path}:{number}: not a result line: {line[:80]}")
    return rows


def number(row, key):
    value = row.get(key, "-")
    return None if value == "-" else float(value)


def median(rows, key):
    values = [v for v in (number(r, key) for r in rows) if v is not None]
    return statistics.median(values) if values else None


def headline(rows):
    """The figure the ratio compares (lower is better): ns/iteration if the
    program has one, else wall seconds per unit if it reports a throughput."""
    ns = median(rows, "ns_per_iter")
    if ns is not None:
        return ns
    throughput = median(rows, "throughput")
    return 1 / throughput if throughput else median(rows, "cpu_s")


def fmt(value, digits):
    return "-" if value is None else f"{value:.{digits}f}"


def checksum_errors(groups):
    errors = []
    by_program = {}
    for (program, variant), rows in groups.items():
        for row in rows:
            by_program.setdefault(program, {}).setdefault(row["checksum"], set()).add(variant)
    for program, sums in by_program.items():
        if len(sums) > 1:
            detail = "; ".join(f"{s}: {', '.join(sorted(v))}" for s, v in sums.items())
            errors.append(f"{program}: the variants disagree on the checksum ({detail})")
    return errors


def table(groups, baseline):
    lines = ["| program | variant | runs | CPU s | ratio | wall s | peak RSS MB | collections | "
             "longest pause ms | in collections s | ns/iter | per wall s |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for (program, variant), rows in groups.items():
        base = groups.get((program, baseline))
        ratio = headline(rows) / headline(base) if base and headline(base) else None
        # The collections of the median run (they vary little, if at all).
        by_cpu = sorted(rows, key=lambda r: float(r["cpu_s"]))
        collections = by_cpu[len(by_cpu) // 2]["collections"]
        rss = median(rows, "max_rss_kb")
        lines.append(f"| {program} | {variant} | {len(rows)} | {fmt(median(rows, 'cpu_s'), 2)} | "
                     f"{fmt(ratio, 2)}{'x' if ratio is not None else ''} | {fmt(median(rows, 'wall_s'), 2)} | "
                     f"{fmt(rss / 1024 if rss is not None else None, 0)} | {collections} | "
                     f"{fmt(median(rows, 'max_pause_ms'), 1)} | {fmt(median(rows, 'gc_s'), 2)} | "
                     f"{fmt(median(rows, 'ns_per_iter'), 1)} | {fmt(median(rows, 'throughput'), 0)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("--baseline", default="shared_ptr", help="the variant ratios are against")
    args = parser.parse_args()
    groups = {}
    for row in load(args.results):
        groups.setdefault((row["program"], row["variant"]), []).append(row)
    if not groups:
        sys.exit(f"{args.results}: no results")
    # Each program's variants together (the C ones come last in a round).
    programs = list(dict.fromkeys(program for program, _ in groups))
    groups = dict(sorted(groups.items(), key=lambda item: programs.index(item[0][0])))
    print(f"Medians; ratio: CPU time (ns/iteration, or wall time per unit of a throughput, where given) "
          f"over {args.baseline}'s.\n")
    print(table(groups, args.baseline))
    errors = checksum_errors(groups)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
