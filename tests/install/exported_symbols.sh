#!/usr/bin/env bash
# Checks what the built libraries export: only the native C API (cgc_*), and
# no CPython name (Py*, _Py*), so that cyclegc can share a process (or a
# static link) with an embedded CPython.
#
# usage: exported_symbols.sh <build dir>
#
# libcyclegc.so: every defined dynamic symbol (nm -D --defined-only) must
#   start with cgc_ (besides symbols the linker or a sanitizer adds).
# libcyclegc.a: no defined global symbol (nm --defined-only -g) may start with
#   Py/_Py, and every one with default visibility must start with cgc_.
#   The C++ internals (namespace cyclegc::internal, template instantiations,
#   DW.ref.* personality references) are global in the object files but
#   hidden (-fvisibility=hidden); nm cannot show visibility, so readelf is
#   used, and they are listed, not rejected. So are standard-library template
#   instantiations and inline variables (weak or unique: they cannot clash).
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 <build dir>" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
so="$build/libcyclegc.so"
archive="$build/libcyclegc.a"
[ -e "$so" ] || { echo "no $so" >&2; exit 1; }
[ -e "$archive" ] || { echo "no $archive" >&2; exit 1; }

status=0
bad() {
    printf 'FAIL: %s\n' "$1"
    sed 's/^/    /'
    status=1
}

# Symbols the linker defines in every shared object, if it exports them, and
# those sanitizer instrumentation adds (ODR indicators of instrumented globals).
tool_symbols='^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$|^__odr_asan[._]|^__(asan|ubsan|sancov)_'

# ---- the shared library ------------------------------------------------------
so_symbols=$(nm -D --defined-only "$so" | awk 'NF >= 3 { print $NF }' | sed 's/@.*//' | sort -u)
count=$(printf '%s\n' "$so_symbols" | grep -c . || true)
echo "libcyclegc.so: $count exported symbols"
[ "$count" -gt 0 ] || bad "libcyclegc.so exports nothing (is nm working?)" </dev/null
py=$(printf '%s\n' "$so_symbols" | grep -E '^_?Py' || true)
[ -z "$py" ] || bad "libcyclegc.so exports CPython names:" <<<"$py"
other=$(printf '%s\n' "$so_symbols" | grep -v '^cgc_' | grep -Ev "$tool_symbols" || true)
[ -z "$other" ] || bad "libcyclegc.so exports symbols outside the cgc_ API (C++ symbols should be hidden):" \
    <<<"$(printf '%s\n' "$other" | c++filt | paste -d' ' <(printf '%s\n' "$other") -)"
printf '%s\n' "$so_symbols" | grep -q '^cgc_collect$' || bad "libcyclegc.so does not export cgc_collect" </dev/null

# ---- the static library ------------------------------------------------------
a_symbols=$(nm --defined-only -g "$archive" | awk 'NF >= 3 { print $NF }' | sort -u)
count=$(printf '%s\n' "$a_symbols" | grep -c . || true)
echo "libcyclegc.a: $count global symbols"
py=$(printf '%s\n' "$a_symbols" | grep -E '^_?Py' || true)
[ -z "$py" ] || bad "libcyclegc.a defines CPython names:" <<<"$py"

# Defined GLOBAL/WEAK/UNIQUE symbols of every member: "binding visibility name".
symbols=$(readelf -sW "$archive" |
    awk '($5 == "GLOBAL" || $5 == "WEAK" || $5 == "UNIQUE") && $7 != "UND" && NF >= 8 { print $5, $6, $8 }' |
    sort -u)
hidden=$(printf '%s\n' "$symbols" | awk '$2 == "HIDDEN" || $2 == "INTERNAL" { print $3 }' | sort -u)
visible=$(printf '%s\n' "$symbols" | awk '$2 == "DEFAULT" || $2 == "PROTECTED"' | sort -u)
# Vague linkage from the standard library's headers (template instantiations,
# inline variables: weak or unique, identical in every object that has them)
# cannot clash in a static link; they are listed, not rejected.
std_vague=$(printf '%s\n' "$visible" | awk '($1 == "WEAK" || $1 == "UNIQUE") && $3 ~ /^_ZN?K?St/ { print $3 }' | sort -u)
other=$(printf '%s\n' "$visible" | awk '{ print $3 }' | grep -v '^cgc_' | grep -Ev "$tool_symbols" |
    grep -vxF -f <(printf '%s\n' "$std_vague" | grep . || echo '#none#') | grep -v '^$' || true)
[ -z "$other" ] || bad "libcyclegc.a has visible symbols outside the cgc_ API (C++ symbols should be hidden):" \
    <<<"$(printf '%s\n' "$other" | c++filt | paste -d' ' <(printf '%s\n' "$other") -)"
# Every global nm lists must be accounted for by readelf.
unexplained=$(comm -23 <(printf '%s\n' "$a_symbols") <(printf '%s\n' "$symbols" | awk '{ print $3 }' | sort -u) |
    grep -v '^$' || true)
[ -z "$unexplained" ] || bad "libcyclegc.a: symbols nm lists that readelf does not:" <<<"$unexplained"
hidden_count=$(printf '%s\n' "$hidden" | grep -c . || true)
echo "libcyclegc.a: $hidden_count hidden C++ internals (allowed), e.g.:"
{ printf '%s\n' "$hidden" | grep . | head -3 | c++filt | sed 's/^/    /'; } || true  # (head may cut the pipe)
if [ -n "$std_vague" ]; then
    echo "libcyclegc.a: standard-library vague-linkage symbols with default visibility (allowed):"
    printf '%s\n' "$std_vague" | c++filt | sed 's/^/    /'
fi

if [ "$status" -eq 0 ]; then echo "ok"; fi
exit "$status"
