// What the C++ programs of bench/programs share: the collectors' figures
// and the choice of variant on the command line.
//
//     PROGRAM VARIANT [SIZES...]     runs one variant, prints one result line
//     PROGRAM --variants             lists the variants built in
//
// Each program writes its algorithm once, as a template over a policy (the
// variant: how nodes are allocated, held and released), and lists its
// policies in main. A policy names its `collector` (below) and its variant.
#ifndef CYCLEGC_BENCH_PROGRAMS_HPP
#define CYCLEGC_BENCH_PROGRAMS_HPP

#include "result.h"
#include "../replay/graph.hpp"

#include <cyclegc/cyclegc.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
#include <gc.h>
#endif

namespace programs {

// Plain allocation (std::shared_ptr, std::unique_ptr, an arena): no
// collector, nothing to report.
struct no_collector {
    static void init() {}
    static void collect() {}
    static void report(program_result &) {}
};

// cyclegc with its default settings: automatic collection on, CPython's
// thresholds.
struct cyclegc_collector {
    static void init() {}
    static void collect() { cyclegc::collect(); }
    static void report(program_result &r) {
        r.generations = 3;
        r.max_pause_ns = 0;
        r.gc_ns = 0;
        for (int g = 0; g < 3; ++g) {
            auto stats = cyclegc::get_stats(g);
            r.collections[g] = stats.collections;
            r.max_pause_ns = std::max(r.max_pause_ns, double(stats.max_pause_ns));
            r.gc_ns += double(stats.total_ns);
        }
    }
};

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
// The Boehm-Demers-Weiser collector with its defaults (GC_INIT only); its
// pauses are timed from its collection events.
struct boehm_collector {
    struct pauses {
        double start = 0, longest = 0, total = 0;
    };
    static pauses &timing() {
        static pauses p;
        return p;
    }
    static void on_event(GC_EventType event) {
        if (event == GC_EVENT_START) timing().start = program_now_ns();
        if (event != GC_EVENT_END) return;
        double pause = program_now_ns() - timing().start;
        timing().longest = std::max(timing().longest, pause);
        timing().total += pause;
    }
    static void init() {
        GC_INIT();
        GC_set_on_collection_event(on_event);
    }
    static void collect() { GC_gcollect(); }
    static void report(program_result &r) {
        r.generations = 1;
        r.collections[0] = GC_get_gc_no();
        r.max_pause_ns = timing().longest;
        r.gc_ns = timing().total;
    }
    // Placement into collected memory. Boehm runs no destructor: whatever a
    // T owns must be collected memory too (gc_allocator for containers).
    template <class T, class... Args>
    static T *make(Args &&...args) {
        return new (GC_MALLOC(sizeof(T))) T{std::forward<Args>(args)...};
    }
};
#endif

// Every variant draws the same random sequence.
using random = cgcbench::Rng;

// Runs `Program::run<Policy>` for the policy named on the command line.
// Program: a struct with `static constexpr const char *name` and
// `template <class P> static void run(int argc, char **argv, program_result &)`.
template <class Program, class... Policies>
int main(int argc, char **argv) {
    program_start();
    if (argc < 2 || std::strcmp(argv[1], "--variants") == 0) {
        ((std::printf("%s\n", Policies::variant)), ...);
        return argc < 2 ? 2 : 0;
    }
    bool found = false;
    auto run_if_named = [&]<class P>() {
        if (found || std::strcmp(argv[1], P::variant) != 0) return;
        found = true;
        using collector = typename P::collector;
        collector::init();
        program_result r = program_result_init(Program::name, P::variant);
        Program::template run<P>(argc, argv, r);
        collector::report(r);
        program_print_result(&r);
    };
    (run_if_named.template operator()<Policies>(), ...);
    if (!found) std::fprintf(stderr, "%s: no variant \"%s\" (--variants lists them)\n", argv[0], argv[1]);
    return found ? 0 : 2;
}

}  // namespace programs

#endif
