#!/usr/bin/env bash
# Installs a build into a temporary prefix and uses it as a user would.
#
# usage: install_test.sh <build dir> <source dir> [all|cmake-static]
#
#   all (default)  1. cmake --install <build dir> --prefix <tmp>
#                  2. pkg-config: compile tests/install/consumer.c against the
#                     shared library and run it (LD_LIBRARY_PATH);
#                  3. pkg-config --static: link it with <tmp>/lib/libcyclegc.a
#                     and run it without the shared library;
#                  4. CMake: configure and build tests/install/cmake_consumer
#                     (find_package(cyclegc), cyclegc::cyclegc) with
#                     CMAKE_PREFIX_PATH=<tmp> and run it.
#   cmake-static   1, then the CMake project linking cyclegc::cyclegc_static
#                  from a C-only project (as the README allows).
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 <build dir> <source dir> [all|cmake-static]" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
mode=${3:-all}
here="$source/tests/install"
cc=${CC:-cc}

work=$(mktemp -d "${TMPDIR:-/tmp}/cyclegc-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

step() { printf '\n=== %s\n' "$*"; }
fail() {
    printf '\ninstall test FAILED: %s\n' "$*" >&2
    exit 1
}
run() {  # echo a command, then run it
    printf '+ %s\n' "$*"
    "$@"
}

step "install into $prefix"
echo "+ cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install"; }
pc=$(find "$prefix" -name cyclegc.pc -print -quit)
[ -n "$pc" ] || fail "no cyclegc.pc was installed"
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
for f in include/cyclegc/cyclegc.h include/cyclegc/Python.h; do
    [ -f "$prefix/$f" ] || fail "$f was not installed"
done
for f in libcyclegc.a libcyclegc.so; do
    [ -e "$libdir/$f" ] || fail "$f was not installed in $libdir"
done
[ -f "$libdir/cmake/cyclegc/cyclegcConfig.cmake" ] || fail "no CMake package in $libdir/cmake/cyclegc"

# Only the freshly installed package must be found.
export PKG_CONFIG_PATH="$pcdir"
# Nothing may come from the build tree or a system-wide install.
unset LD_LIBRARY_PATH CPATH C_INCLUDE_PATH LIBRARY_PATH CMAKE_PREFIX_PATH || true

cmake_consumer() {  # <name> <extra cmake args...>
    local name=$1
    shift
    step "CMake consumer ($name): find_package(cyclegc) with CMAKE_PREFIX_PATH=$prefix"
    echo "+ cmake -S $here/cmake_consumer -B $work/$name -DCMAKE_PREFIX_PATH=$prefix $*"
    cmake -S "$here/cmake_consumer" -B "$work/$name" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" "$@" >"$work/$name.log" 2>&1 ||
        { cat "$work/$name.log"; fail "configuring the CMake consumer ($name)"; }
    grep -q "cyclegc_DIR.*$prefix" "$work/$name/CMakeCache.txt" ||
        fail "find_package(cyclegc) did not find the package in $prefix: $(grep cyclegc_DIR "$work/$name/CMakeCache.txt")"
    echo "+ cmake --build $work/$name"
    cmake --build "$work/$name" >>"$work/$name.log" 2>&1 ||
        { cat "$work/$name.log"; fail "building the CMake consumer ($name)"; }
    local exe
    exe=$(find "$work/$name" -maxdepth 1 -type f -name 'consumer*' -perm -u+x -print -quit)
    [ -n "$exe" ] || fail "the CMake consumer ($name) built no executable"
    run "$exe" || fail "the CMake consumer ($name) failed"
}

if [ "$mode" = cmake-static ]; then
    cmake_consumer cmake_static -DCONSUMER_STATIC=ON
    step "ok"
    exit 0
fi
[ "$mode" = all ] || fail "unknown mode '$mode'"

step "pkg-config"
cflags=$(pkg-config --cflags cyclegc) || fail "pkg-config --cflags cyclegc"
libs=$(pkg-config --libs cyclegc) || fail "pkg-config --libs cyclegc"
static_libs=$(pkg-config --static --libs cyclegc) || fail "pkg-config --static --libs cyclegc"
echo "cflags: $cflags"
echo "libs: $libs"
echo "static libs: $static_libs"
case "$cflags" in
*"$prefix"*) ;;
*) fail "pkg-config --cflags does not point into the install prefix $prefix (cyclegc.pc: $(grep '^prefix=' "$pc"))" ;;
esac
case "$libs" in
*"$prefix"*) ;;
*) fail "pkg-config --libs does not point into the install prefix $prefix (cyclegc.pc: $(grep '^prefix=' "$pc"))" ;;
esac
[ "$(pkg-config --modversion cyclegc)" = "$(sed -n 's/^Version: //p' "$pc")" ] || fail "pkg-config --modversion"

step "C consumer, shared library (pkg-config --cflags --libs)"
# shellcheck disable=SC2086  # the flags are word lists
run "$cc" -std=c11 -Wall -Wextra -Werror -Wpedantic -o "$work/consumer_shared" "$here/consumer.c" \
    $cflags $libs || fail "compiling the consumer against the shared library"
readelf -d "$work/consumer_shared" | grep -q 'NEEDED.*libcyclegc\.so' ||
    fail "the shared consumer does not use libcyclegc.so"
run env LD_LIBRARY_PATH="$libdir" "$work/consumer_shared" || fail "the shared consumer failed"

step "C consumer, static library (libcyclegc.a + pkg-config --static --libs)"
# shellcheck disable=SC2086
run "$cc" -std=c11 -Wall -Wextra -Werror -Wpedantic -o "$work/consumer_static" "$here/consumer.c" \
    $cflags "$libdir/libcyclegc.a" $static_libs || fail "linking the consumer with libcyclegc.a"
if readelf -d "$work/consumer_static" | grep -q 'NEEDED.*libcyclegc'; then
    fail "the static consumer still depends on the shared library: $(readelf -d "$work/consumer_static" | grep NEEDED)"
fi
run "$work/consumer_static" || fail "the static consumer failed"

cmake_consumer cmake_shared
step "ok"
