#!/usr/bin/env bash
# memlab reads cyclegc's heap snapshots: the leak hunt example writes them
# around a planted leak; `memlab find-leaks` must report the leaked widgets
# with a retainer trace through them, and memlab's analyses (object sizes,
# unbound growth) must run on them.
#
#   memlab_test.sh LEAK_HUNT_BINARY BUILD_DIR
#
# memlab is looked for in $CYCLEGC_MEMLAB, then PATH, then
# BUILD_DIR/memlab/node_modules/.bin and ~/.cache/cyclegc-memlab (install it
# with: PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix BUILD_DIR/memlab memlab).
# Exits 77 (skipped) without node or memlab.
set -u
leak_hunt=$1
build=$2
command -v node > /dev/null || { echo "SKIP: node is not installed"; exit 77; }
memlab=${CYCLEGC_MEMLAB:-}
for candidate in "$(command -v memlab)" "$build/memlab/node_modules/.bin/memlab" \
                 "$HOME/.cache/cyclegc-memlab/node_modules/.bin/memlab"; do
  [ -z "$memlab" ] && [ -n "$candidate" ] && [ -x "$candidate" ] && memlab=$candidate
done
[ -n "$memlab" ] || { echo "SKIP: memlab not found (see the comment at the top of $0)"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cyclegc-memlab.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
# memlab's progress lines end in carriage returns and escapes: plain text.
plain() { tr '\r' '\n' | sed 's/\x1b\[[0-9;]*[A-Za-z]//g'; }

"$leak_hunt" --snapshots "$work/snapshots" > "$work/leak_hunt.txt" || fail "leak_hunt did not find its leak"
s=$work/snapshots
"$memlab" find-leaks --baseline "$s/baseline.heapsnapshot" --target "$s/target.heapsnapshot" \
  --final "$s/final.heapsnapshot" --trace-all-objects --work-dir "$work/memlab" 2>&1 | plain > "$work/find-leaks.txt"
grep -q "Widget'.*object.* 29 " "$work/find-leaks.txt" || fail "find-leaks does not list the 29 leaked widgets"
grep -q -- "--0 (element)--->  \[(anonymous namespace)::EventBus\]" "$work/find-leaks.txt" ||
  fail "find-leaks shows no retainer trace from the root through the event bus"
grep -q -- "--->  \[(anonymous namespace)::Listener\]" "$work/find-leaks.txt" ||
  fail "find-leaks' retainer trace does not go through the listener"
"$memlab" analyze object-size --snapshot "$s/final.heapsnapshot" 2>&1 | plain > "$work/object-size.txt" ||
  fail "memlab analyze object-size failed"
grep -q "Widget" "$work/object-size.txt" || fail "object-size lists no widget"
"$memlab" analyze unbound-object --snapshot-dir "$s/growth" 2>&1 | plain > "$work/unbound-object.txt" ||
  fail "memlab analyze unbound-object failed"
grep -q "EventBus.*>.*>.*>" "$work/unbound-object.txt" || fail "unbound-object does not find the growing event bus"
"$memlab" analyze unbound-shape --snapshot-dir "$s/growth" > /dev/null 2>&1 || fail "memlab analyze unbound-shape failed"
if [ $failed -ne 0 ]; then
  for f in "$work"/*.txt; do echo "---- $f"; cat "$f"; done
  exit 1
fi
echo "memlab read the snapshots: leaks, retainer trace and analyses as expected"
