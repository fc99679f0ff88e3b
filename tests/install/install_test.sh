#!/usr/bin/env bash
# cyclegc used as a user would use it: installed, packaged, or embedded in
# another CMake project; each consumer program (consumer.c, consumer.cpp)
# is built against it and run.
#
# usage: install_test.sh <mode> <build dir> <source dir> <work dir> [C|CXX] [static]
#
#   prefix        cmake --install <build dir> --prefix <work dir>/prefix; the
#                 files a user needs are there (pkgconfig and find_package
#                 use this prefix)
#   pkgconfig     consumer.c and consumer.cpp compiled with pkg-config's flags
#                 from the prefix: shared, with the library's directory as the
#                 run-time search path (-Wl,-rpath), and static (libcyclegc.a)
#   find_package  tests/install/cmake_consumer with find_package(cyclegc)
#   subdirectory  the same with add_subdirectory(<source dir>)
#   fetchcontent  the same with FetchContent (SOURCE_DIR <source dir>)
#   deb           cpack -G DEB in <build dir>; the package unpacked (dpkg -x)
#                 into a scratch root; consumers built against it
#
# C or CXX: the language of the consumer project (only that one is enabled);
# "static" links cyclegc's static library. Compilers: $CC and $CXX (CMake's
# defaults when unset); CMAKE_<LANG>_COMPILER_LAUNCHER from the environment.
set -euo pipefail

if [ $# -lt 4 ]; then
    sed -n '5,21p' "$0" >&2
    exit 2
fi
mode=$1
build=$(cd "$2" && pwd)
source=$(cd "$3" && pwd)
base=$4
language=${5:-C}
link=${6:-shared}
here="$source/tests/install"
prefix="$base/prefix"
cc=${CC:-cc}
cxx=${CXX:-c++}

step() { printf '\n=== %s\n' "$*"; }
fail() {
    printf '\ninstall test FAILED: %s\n' "$*" >&2
    exit 1
}
run() {  # echo a command, then run it
    printf '+ %s\n' "$*"
    "$@"
}
# Runs a command with its output in a log, shown only if it fails.
logged() {  # <log> <what> <command...>
    local log=$1 what=$2
    shift 2
    printf '+ %s\n' "$*"
    "$@" >"$log" 2>&1 || { cat "$log"; fail "$what"; }
}

# Nothing may come from the build tree or a system-wide install.
unset LD_LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH LIBRARY_PATH CMAKE_PREFIX_PATH \
    PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR || true

# The CMake consumer project, configured with <cmake args>, its program built
# and run: <name> <cmake args...>.
cmake_consumer() {
    local name=$1
    shift
    local dir="$work/$name"
    step "CMake consumer ($name, $language, $link)"
    rm -rf "$dir"
    local static=OFF
    [ "$link" = static ] && static=ON
    logged "$dir.configure.log" "configuring the consumer ($name)" \
        cmake -S "$here/cmake_consumer" -B "$dir" -DCONSUMER_LANGUAGE="$language" -DCONSUMER_STATIC=$static \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@"
    logged "$dir.build.log" "building the consumer ($name)" cmake --build "$dir" --target consumer
    run "$dir/consumer" || fail "the consumer ($name) failed"
}

# The consumer's own compile command: none of cyclegc's warning or sanitizer
# flags (cyclegc's own commands have them: -DCYCLEGC_WERROR=ON was given).
check_no_flags_leak() {  # <consumer build dir>
    local commands="$1/compile_commands.json"
    grep -q -- '-Werror' "$commands" || fail "cyclegc's sources were not compiled with -Werror: $commands"
    local consumer_command
    consumer_command=$(grep '"command".*consumer\.c' "$commands") || fail "no compile command for the consumer"
    echo "consumer's compile command: $consumer_command"
    case "$consumer_command" in
    *-Werror* | *-Wall* | *-Wshadow* | *-fsanitize*) fail "cyclegc's flags reach the consumer's target" ;;
    esac
}

# An embedded cyclegc builds neither tests nor benchmarks nor examples and
# looks for none of their dependencies.
check_embedded_defaults() {  # <consumer build dir>
    local cache="$1/CMakeCache.txt" option
    for option in CYCLEGC_BUILD_TESTS CYCLEGC_BUILD_EXAMPLES CYCLEGC_BUILD_BENCHMARKS CYCLEGC_INSTALL; do
        grep -q "^$option:BOOL=OFF" "$cache" || fail "embedded: $option is not OFF ($(grep "^$option:" "$cache"))"
    done
    if grep -qE '^(GTest_DIR|benchmark_DIR|ZLIB_INCLUDE_DIR|Python3_EXECUTABLE)' "$cache"; then
        fail "embedded: cyclegc looked for its tests' dependencies: $(grep -E '^(GTest|benchmark|ZLIB|Python3)' "$cache")"
    fi
}

# The prefix has what a user needs: <prefix> <libdir>.
check_installed_files() {
    local root=$1 libdir=$2 f
    for f in include/cyclegc/cyclegc.h include/cyclegc/Python.h include/cyclegc/cyclegc.hpp; do
        [ -f "$root/$f" ] || fail "$f was not installed in $root"
    done
    for f in libcyclegc.a libcyclegc.so libcyclegc.so.0 pkgconfig/cyclegc.pc cmake/cyclegc/cyclegcConfig.cmake \
        cmake/cyclegc/cyclegcConfigVersion.cmake cmake/cyclegc/cyclegcTargets.cmake; do
        [ -e "$libdir/$f" ] || fail "$f was not installed in $libdir"
    done
}

# consumer.c and consumer.cpp with pkg-config's flags (PKG_CONFIG_PATH set).
pkgconfig_consumers() {
    local cflags libs static_libs libdir
    cflags=$(pkg-config --cflags cyclegc) || fail "pkg-config --cflags cyclegc"
    libs=$(pkg-config --libs cyclegc) || fail "pkg-config --libs cyclegc"
    static_libs=$(pkg-config --variable=static_libs cyclegc) || fail "pkg-config --variable=static_libs cyclegc"
    libdir=$(pkg-config --variable=libdir cyclegc) || fail "pkg-config --variable=libdir cyclegc"
    printf 'cflags: %s\nlibs: %s\nstatic libs: %s\nlibdir: %s\n' "$cflags" "$libs" "$static_libs" "$libdir"
    [ -e "$libdir/libcyclegc.so" ] || fail "pkg-config's libdir ($libdir) has no libcyclegc.so"

    step "C, shared library, run-time search path: -Wl,-rpath,\$(pkg-config --variable=libdir cyclegc)"
    # shellcheck disable=SC2086  # the flags are word lists
    run "$cc" -std=c11 -Wall -Wextra -Werror -Wpedantic -o "$work/c_shared" "$here/consumer.c" \
        $cflags $libs "-Wl,-rpath,$libdir" || fail "compiling the C consumer against the shared library"
    readelf -d "$work/c_shared" | grep -q 'NEEDED.*libcyclegc\.so' || fail "the C consumer does not use libcyclegc.so"
    run "$work/c_shared" || fail "the C consumer (shared) failed"

    step "C, static library: \$(pkg-config --variable=static_libs cyclegc)"
    # shellcheck disable=SC2086
    run "$cc" -std=c11 -Wall -Wextra -Werror -Wpedantic -o "$work/c_static" "$here/consumer.c" \
        $cflags $static_libs || fail "linking the C consumer with libcyclegc.a"
    if readelf -d "$work/c_static" | grep -q 'NEEDED.*libcyclegc'; then
        fail "the static consumer still depends on the shared library"
    fi
    run "$work/c_static" || fail "the C consumer (static) failed"

    step "C++, shared library: -std=c++20 (the user's), pkg-config's flags, -Wl,-rpath"
    # shellcheck disable=SC2086
    run "$cxx" -std=c++20 -Wall -Wextra -Werror -o "$work/cxx_shared" "$here/consumer.cpp" \
        $cflags $libs "-Wl,-rpath,$libdir" || fail "compiling the C++ consumer against the shared library"
    run "$work/cxx_shared" || fail "the C++ consumer (shared) failed"
}

case "$mode" in
prefix)
    work="$base"
    mkdir -p "$work"
    rm -rf "$prefix"
    step "install into $prefix"
    logged "$work/install.log" "cmake --install" cmake --install "$build" --prefix "$prefix"
    pc=$(find "$prefix" -name cyclegc.pc -print -quit)
    [ -n "$pc" ] || fail "no cyclegc.pc was installed"
    check_installed_files "$prefix" "$(dirname "$(dirname "$pc")")"
    ;;
pkgconfig)
    work="$base/pkgconfig"
    rm -rf "$work" && mkdir -p "$work"
    pc=$(find "$prefix" -name cyclegc.pc -print -quit)
    [ -n "$pc" ] || fail "no cyclegc.pc in $prefix (the install.prefix test makes it)"
    export PKG_CONFIG_PATH
    PKG_CONFIG_PATH=$(dirname "$pc")
    step "pkg-config from $PKG_CONFIG_PATH"
    case "$(pkg-config --cflags --libs cyclegc)" in
    *"$prefix"*) ;;
    *) fail "pkg-config's flags do not point into the install prefix $prefix" ;;
    esac
    [ "$(pkg-config --modversion cyclegc)" = "$(sed -n 's/^Version: //p' "$pc")" ] || fail "pkg-config --modversion"
    pkgconfig_consumers
    ;;
find_package)
    work="$base"
    cmake_consumer "find_package-$language-$link" -DCYCLEGC_FROM=package -DCMAKE_PREFIX_PATH="$prefix"
    grep -q "cyclegc_DIR.*$prefix" "$work/find_package-$language-$link/CMakeCache.txt" ||
        fail "find_package(cyclegc) did not find the package in $prefix"
    ;;
subdirectory | fetchcontent)
    work="$base"
    name="$mode-$language"
    cmake_consumer "$name" -DCYCLEGC_FROM="$mode" -DCYCLEGC_SOURCE_DIR="$source" -DCYCLEGC_WERROR=ON
    check_embedded_defaults "$work/$name"
    check_no_flags_leak "$work/$name"
    ;;
deb)
    work="$base/deb"
    rm -rf "$work" && mkdir -p "$work"
    step "cpack -G DEB"
    logged "$work/cpack.log" "cpack -G DEB" cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/cpack"
    deb=$(find "$work/cpack" -maxdepth 1 -name '*.deb' -print -quit)
    [ -n "$deb" ] || fail "cpack made no .deb"
    run dpkg-deb --info "$deb"
    run dpkg-deb --contents "$deb"
    run dpkg -x "$deb" "$work/root"
    pc=$(find "$work/root" -name cyclegc.pc -print -quit)
    [ -n "$pc" ] || fail "the package has no cyclegc.pc"
    check_installed_files "$work/root/usr" "$(dirname "$(dirname "$pc")")"
    export PKG_CONFIG_PATH
    PKG_CONFIG_PATH=$(dirname "$pc")
    step "pkg-config from the unpacked package ($PKG_CONFIG_PATH)"
    pkgconfig_consumers
    language=CXX
    cmake_consumer deb-cxx -DCYCLEGC_FROM=package -DCMAKE_PREFIX_PATH="$work/root/usr"
    ;;
*)
    fail "unknown mode '$mode'"
    ;;
esac
step "ok"
