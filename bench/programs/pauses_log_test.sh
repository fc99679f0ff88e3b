#!/usr/bin/env bash
# CTest bench.pauses.log: program_pauses --pause-log with a budget logs
# every pause the statistics count, with young collections, slices and the
# cycles' last slices, and plot_pauses.py thins the log into plot data.
#
#     pauses_log_test.sh PROGRAM_PAUSES WORK_DIR
set -euo pipefail
program=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
log=$work/tree-1000000.log
line=$("$program" --mode tree --heap 20000 --allocations 1000000 --pause-budget 1000000 --pause-log "$log" | head -n 1)
echo "$line"
fail() { echo "pauses_log_test: $*" >&2; exit 1; }
pauses=$(sed -n 's/.* pauses=\([0-9]*\) .*/\1/p' <<<"$line")
cycles=$(sed -n 's/.* cycles=\([0-9]*\) .*/\1/p' <<<"$line")
[[ $(wc -l < "$log") -eq $pauses ]] || fail "the log has $(wc -l < "$log") pauses, the statistics $pauses"
for kind in young slice last_slice; do
    grep -q " $kind\$" "$log" || fail "no $kind pause in the log"
done
[[ $(grep -c ' last_slice$' "$log") -eq $cycles ]] || fail "cycles=$cycles, but not as many last slices"
if command -v python3 > /dev/null; then
    python3 "$here/plot_pauses.py" "$log" --out "$work"
    [[ -s $work/tree-1000000.ccdf && -s $work/tree-1000000.time ]] || fail "plot_pauses.py wrote no data"
else
    echo "pauses_log_test: python3 is missing: plot_pauses.py not checked"
fi
echo "pauses_log_test: $pauses pauses, $cycles cycles"
