// cyclegc_stress: differential stress test of the collector against a model.
//
//   cyclegc_stress [--seed S] [--seeds N] [--ops N] [--seconds T]
//                  [--check-every N] [--trace] [--record FILE] [--replay FILE]
//                  [--pause-budget NS]
//
// Runs N seeds (S, S+1, ...) of N operations each; with --seconds, keeps
// running further seeds until T seconds have passed (the long budget). A
// failure prints the seed and the operation, and how to replay it:
//   cyclegc_stress --seed S --ops N [--trace]
// --replay FILE runs a fuzzer input (or a --record file) through the same
// driver; --record FILE writes the choices of one seed as such a file.
// --pause-budget NS runs the collector incrementally (cgc_set_pause_budget),
// with a tiny slice of the cycle after every operation.
#include "driver.hpp"

#include <cyclegc/cyclegc.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace cgc_stress;

namespace {

void usage() {
    std::fprintf(stderr,
                 "usage: cyclegc_stress [--seed S] [--seeds N] [--ops N] [--seconds T] [--check-every N]\n"
                 "                      [--trace] [--record FILE] [--replay FILE] [--quiet]\n"
                 "                      [--pause-budget NS]\n");
    std::exit(2);
}

void add(ModelStats &total, const ModelStats &s) {
    for (int g = 0; g < 3; ++g) total.collections[g] += s.collections[g];
    total.freed_by_collector += s.freed_by_collector;
    total.uncollectable += s.uncollectable;
    total.resurrected += s.resurrected;
    total.finalizers += s.finalizers;
    total.callbacks += s.callbacks;
    total.callbacks_in_collection += s.callbacks_in_collection;
    total.weakrefs_freed_by_callbacks += s.weakrefs_freed_by_callbacks;
    total.survived_clear += s.survived_clear;
    total.dealloc_resurrections += s.dealloc_resurrections;
    total.trashcan_untracked_resurrections += s.trashcan_untracked_resurrections;
    total.trashcan_retracked_resurrections += s.trashcan_retracked_resurrections;
    total.unraisable += s.unraisable;
    total.explained_collections += s.explained_collections;
}

}  // namespace

int main(int argc, char **argv) {
    uint64_t seed = 1, seeds = 1, ops = 20000, check_every = 0, pause_budget = 0;
    double seconds = 0;
    bool trace = false, quiet = false;
    std::string record, replay;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (arg == "--seed") seed = std::strtoull(value(), nullptr, 0);
        else if (arg == "--seeds") seeds = std::strtoull(value(), nullptr, 0);
        else if (arg == "--ops") ops = std::strtoull(value(), nullptr, 0);
        else if (arg == "--seconds") seconds = std::strtod(value(), nullptr);
        else if (arg == "--check-every") check_every = std::strtoull(value(), nullptr, 0);
        else if (arg == "--trace") trace = true;
        else if (arg == "--pause-budget") pause_budget = std::strtoull(value(), nullptr, 0);
        else if (arg == "--quiet") quiet = true;
        else if (arg == "--record") record = value();
        else if (arg == "--replay") replay = value();
        else usage();
    }

    if (!replay.empty()) {
        std::ifstream in(replay, std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "cyclegc_stress: cannot read %s\n", replay.c_str());
            return 2;
        }
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        ByteSource source(bytes.data(), bytes.size());
        Options options;
        options.max_ops = UINT64_MAX;
        options.check_every = check_every ? check_every : 1;
        options.trace = trace;
        options.pause_budget = pause_budget;
        options.replay = "cyclegc_stress --replay " + replay + " --trace";
        RunStats s = run_sequence(source, options);
        std::printf("replay %s: %" PRIu64 " operations, %zu bytes: passed\n", replay.c_str(), s.ops, bytes.size());
        cgc_finalize();
        return 0;
    }

    auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    uint64_t total_ops = 0, total_checks = 0, total_objects = 0, runs = 0;
    ModelStats total{};
    for (uint64_t s = seed;; ++s) {
        bool more_seeds = s < seed + seeds;
        if (!more_seeds && !(seconds > 0 && elapsed() < seconds)) break;
        std::vector<uint8_t> bytes;
        RngSource source(s, record.empty() ? nullptr : &bytes);
        Options options;
        options.seed = s;
        options.max_ops = ops;
        options.check_every = check_every;
        options.trace = trace;
        options.pause_budget = pause_budget;
        options.replay = "cyclegc_stress --seed " + std::to_string(s) + " --ops " + std::to_string(ops) +
                         (pause_budget ? " --pause-budget " + std::to_string(pause_budget) : "") + " --trace";
        RunStats r = run_sequence(source, options);
        ++runs;
        total_ops += r.ops;
        total_checks += r.full_checks;
        total_objects += r.objects_created;
        add(total, r.model);
        if (!quiet)
            std::printf("seed %" PRIu64 ": %" PRIu64 " operations, %" PRIu64 " objects, at most %" PRIu64
                        " alive, %" PRIu64 " full checks: passed\n",
                        s, r.ops, r.objects_created, r.max_live, r.full_checks);
        std::fflush(stdout);
        if (!record.empty()) {
            std::ofstream out(record, std::ios::binary);
            out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            break;
        }
    }
    std::printf("cyclegc_stress: %" PRIu64 " seeds from %" PRIu64 ", %" PRIu64 " operations, %" PRIu64
                " objects, %" PRIu64 " full checks, %.1f s: all passed\n",
                runs, seed, total_ops, total_objects, total_checks, elapsed());
    std::printf("  collections %" PRIu64 "/%" PRIu64 "/%" PRIu64 " (gen 0/1/2); freed by the collector %" PRIu64
                "; uncollectable %" PRIu64 "; resurrected %" PRIu64 " (in deallocs %" PRIu64 ", deferred by the trashcan %" PRIu64
                "+%" PRIu64 "); finalizers %" PRIu64 "; weakref callbacks %" PRIu64 " (%" PRIu64 " in collections, %" PRIu64
                " freed their weakref); survived tp_clear %" PRIu64 "; unraisable %" PRIu64
                "; full collections checked against the rules %" PRIu64 "\n",
                total.collections[0], total.collections[1], total.collections[2], total.freed_by_collector,
                total.uncollectable, total.resurrected, total.dealloc_resurrections,
                total.trashcan_untracked_resurrections, total.trashcan_retracked_resurrections, total.finalizers, total.callbacks,
                total.callbacks_in_collection, total.weakrefs_freed_by_callbacks, total.survived_clear,
                total.unraisable, total.explained_collections);
    // Py_FinalizeEx: the default heap's final collections (valgrind checks
    // that nothing leaks after it).
    cgc_finalize();
    return 0;
}
