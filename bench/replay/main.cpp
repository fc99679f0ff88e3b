// cyclegc-replay: replays heap graphs (`cgcgraph 1`, docs/graph-format.md)
// through cyclegc, and optionally an embedded CPython and Boehm, step by
// step, with a floor pass beside them. See BENCHMARKS.md.
#include "graph.hpp"
#include "replay.hpp"
#include "timer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace cgcbench;

namespace {

const char kUsage[] =
    "usage: cyclegc-replay [options] [GRAPH.cgcgraph.gz ...]\n"
    "\n"
    "Replays each heap graph as cyclegc objects and times: build; a full collection of\n"
    "the graph's own garbage; a full collection with every root held; a churn step\n"
    "(10% of the live edges rewritten at random, fixed seed) and a full collection;\n"
    "dropping every root and the full collection that frees the rest. Objects freed\n"
    "at each step are checked against the graph (exit status 1 on a mismatch).\n"
    "\n"
    "  --cpython        replay in an embedded CPython too, and print the ratios\n"
    "  --boehm          replay with the Boehm-Demers-Weiser collector too (if built in)\n"
    "  --json           one JSON object per graph instead of the table\n"
    "  --repeat N       run every replay N times and report the medians (default 1)\n"
    "  --gen-random N   add the synthetic random graph: N nodes, out-degree 0..8, 10% roots\n"
    "  --gen-chain N    add the synthetic chain of N nodes\n"
    "  --churn F        share of live edges the churn step rewrites (default 0.10)\n"
    "  --aged           replay into an aged heap: the nodes scattered in memory among\n"
    "                   other objects, as in a program that has run a while (both\n"
    "                   replays alike; the floor on the graph numbered at random;\n"
    "                   no Boehm, no memory figures). In the real processes measured\n"
    "                   (BENCHMARKS.md) CPython's collections cost 0.3-1.2x what it\n"
    "                   costs in this model, and 6-17x what it costs in the default\n"
    "                   layout (the nodes in CPython's list order: its best case)\n"
    "  --save PATH      write the (single) graph to PATH as .cgcgraph.gz, then replay it\n"
    "  --pause-budget NS  cyclegc's full collections as incremental cycles in slices of\n"
    "                   about NS (cgc_collect_slice); prints each one's longest slice\n"
    "  --wall           time with the wall clock (default: the thread's CPU time)\n"
    "  -q, --quiet      no progress on stderr\n";

struct Options {
    std::vector<std::string> files;
    std::vector<std::pair<char, uint32_t>> generated;  // ('r' | 'c', nodes)
    bool cpython = false, boehm = false, json = false, quiet = false, aged = false;
    int repeat = 1;
    double churn = 0.10;
    uint64_t pause_budget = 0;
    std::string save;
};

[[noreturn]] void usage_error(const std::string &message) {
    std::fprintf(stderr, "cyclegc-replay: %s\n\n%s", message.c_str(), kUsage);
    std::exit(2);
}

uint64_t parse_count(const char *text, const char *option) {
    char *end = nullptr;
    double v = std::strtod(text, &end);  // accepts 1e6
    if (!end || *end || v < 1 || v >= 4e9) usage_error(std::string("bad count for ") + option + ": " + text);
    return static_cast<uint64_t>(v);
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--cpython") o.cpython = true;
        else if (a == "--boehm") o.boehm = true;
        else if (a == "--json") o.json = true;
        else if (a == "--aged") o.aged = true;
        else if (a == "--wall") use_wall_clock() = true;
        else if (a == "--pause-budget") o.pause_budget = std::strtoull(value(), nullptr, 10);
        else if (a == "-q" || a == "--quiet") o.quiet = true;
        else if (a == "--repeat") o.repeat = static_cast<int>(parse_count(value(), "--repeat"));
        else if (a == "--gen-random") o.generated.emplace_back('r', static_cast<uint32_t>(parse_count(value(), "--gen-random")));
        else if (a == "--gen-chain") o.generated.emplace_back('c', static_cast<uint32_t>(parse_count(value(), "--gen-chain")));
        else if (a == "--churn") {
            o.churn = std::atof(value());
            if (!(o.churn >= 0 && o.churn <= 1)) usage_error("--churn takes a share between 0 and 1");
        } else if (a == "--save") o.save = value();
        else if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (!a.empty() && a[0] == '-') usage_error("unknown option " + a);
        else o.files.push_back(a);
    }
    if (o.files.empty() && o.generated.empty()) usage_error("no graph given");
    if (!o.save.empty() && o.files.size() + o.generated.size() != 1) usage_error("--save takes exactly one graph");
    return o;
}

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The steps, their names and the number of nodes each is counted per.
struct StepInfo {
    const char *key, *label;
    Step ReplayResult::*member;
    uint64_t expected;
    double per;         // denominator of "ns per node"
    const char *unit;   // what `per` counts
};

std::vector<StepInfo> step_table(const Graph &g, const Model &m) {
    double n = g.nodes ? g.nodes : 1;
    auto nz = [](double x) { return x > 0 ? x : 1; };
    double alive_before_drop = nz(double(m.live_after_churn()));
    return {
        {"build", "build (alloc+track+link)", &ReplayResult::build, m.acyclic_garbage, n, "node"},
        {"collect_garbage", "full collect: own garbage", &ReplayResult::collect_garbage, m.cyclic_garbage(),
         nz(double(g.nodes - m.acyclic_garbage)), "node"},
        {"collect_live", "full collect: roots held", &ReplayResult::collect_live, 0, nz(double(m.live)), "node"},
        {"churn", "churn: edge rewrites", &ReplayResult::churn, m.churn_freed_by_refcount, nz(double(m.churn.size())), "rewrite"},
        {"churn_collect", "full collect after churn", &ReplayResult::churn_collect, m.churn_freed_by_collect,
         nz(double(m.live - m.churn_freed_by_refcount)), "node"},
        {"drop", "drop every root", &ReplayResult::drop, m.drop_freed_by_refcount, alive_before_drop, "node"},
        {"drop_collect", "full collect: the rest", &ReplayResult::drop_collect, m.drop_freed_by_collect, alive_before_drop, "node"},
    };
}

// Medians over the repeats of one replay.
struct Summary {
    bool ran = false;
    std::vector<double> ns_per;  // per step, per its denominator
    std::vector<uint64_t> freed;
    double drop_total = NAN;     // drop + drop_collect, per node alive before the drop
    double rss = NAN, malloc_bytes = NAN, heap_bytes = NAN;
};

Summary summarise(const std::vector<ReplayResult> &runs, const std::vector<StepInfo> &steps) {
    Summary s;
    if (runs.empty() || !runs[0].ran) return s;
    s.ran = true;
    for (const StepInfo &st : steps) {
        std::vector<double> v;
        for (const ReplayResult &r : runs) v.push_back((r.*st.member).ns / st.per);
        s.ns_per.push_back(median(v));
        s.freed.push_back((runs[0].*st.member).freed);
    }
    std::vector<double> drop, rss, mal, heap;
    for (const ReplayResult &r : runs) {
        drop.push_back((r.drop.ns + r.drop_collect.ns) / steps[5].per);
        rss.push_back(r.rss_bytes);
        mal.push_back(r.malloc_bytes);
        heap.push_back(r.heap_bytes);
    }
    s.drop_total = median(drop);
    // RSS growth: the first run is the one that maps fresh memory; later
    // runs may reuse pages the allocator kept. Report the largest.
    s.rss = *std::max_element(rss.begin(), rss.end());
    s.malloc_bytes = median(mal);
    s.heap_bytes = median(heap);
    return s;
}

std::string fmt(double v, int precision = 1) {
    if (!std::isfinite(v) || v < 0) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

std::string json_number(double v, int precision = 3) {
    if (std::isnan(v) || std::isinf(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

std::string json_string(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
            continue;
        }
        out += c;
    }
    return out + "\"";
}

std::string json_summary(const Summary &s, const std::vector<StepInfo> &steps, bool with_freed) {
    std::string out = "{";
    for (size_t i = 0; i < steps.size(); ++i) {
        out += std::string("\"") + steps[i].key + "_ns_per_" + steps[i].unit + "\":" + json_number(s.ns_per[i]) + ",";
    }
    out += "\"drop_and_collect_ns_per_node\":" + json_number(s.drop_total) + ",";
    if (with_freed) {
        out += "\"freed\":{";
        for (size_t i = 0; i < steps.size(); ++i)
            out += std::string(i ? "," : "") + "\"" + steps[i].key + "\":" + std::to_string(s.freed[i]);
        out += "},";
    }
    out += "\"rss_bytes_per_node\":" + json_number(s.rss, 1);
    if (s.malloc_bytes >= 0) out += ",\"malloc_bytes_per_node\":" + json_number(s.malloc_bytes, 1);
    if (s.heap_bytes >= 0) out += ",\"gc_heap_bytes_per_node\":" + json_number(s.heap_bytes, 1);
    return out + "}";
}

int run_graph(Graph &g, const Options &o, std::vector<std::string> &errors) {
    auto progress = [&](const std::string &message) {
        if (!o.quiet) std::fprintf(stderr, "[%s] %s\n", g.name.c_str(), message.c_str());
    };
    Timer model_timer;
    Model m = build_model(g, o.churn);
    progress("model: " + std::to_string(m.live) + " live, " + std::to_string(m.garbage) + " garbage (" +
             std::to_string(m.acyclic_garbage) + " acyclic), " + std::to_string(m.churn.size()) + " churn rewrites; " +
             fmt(model_timer.ns() / 1e6, 0) + " ms");
    int status = 0;
    auto error = [&](const std::string &message) {
        errors.push_back(g.name + ": " + message);
        std::fprintf(stderr, "cyclegc-replay: %s: %s\n", g.name.c_str(), message.c_str());
        status = 1;
    };
    if (g.stated_garbage && *g.stated_garbage != m.garbage)
        error("the file's stats say garbage=" + std::to_string(*g.stated_garbage) + ", the graph has " +
              std::to_string(m.garbage) + " nodes no root reaches");
    if (g.stated_roots && *g.stated_roots != m.roots)
        error("the file's stats say roots=" + std::to_string(*g.stated_roots) + ", the graph has " + std::to_string(m.roots));

    Aging aging;
    Graph floor_graph, churn_floor_graph;  // --aged: the floor's graphs, numbered at random
    if (o.aged) {
        aging = make_aging(g);
        floor_graph = renumbered(g, g.targets);
        churn_floor_graph = renumbered(g, m.churned_targets);
    }
    const Graph &fg = o.aged ? floor_graph : g, &cfg = o.aged ? churn_floor_graph : g;
    const std::vector<uint32_t> &churn_floor_targets = o.aged ? churn_floor_graph.targets : m.churned_targets;

    std::vector<ReplayResult> cg, cp, bw;
    std::vector<double> floor_ns, churn_floor_ns;
    for (int rep = 0; rep < o.repeat && status == 0; ++rep) {
        cg.push_back(replay_cyclegc(g, m, aging, rep == 0));
        if (!cg.back().error.empty()) error(cg.back().error);
        progress("run " + std::to_string(rep + 1) + ": cyclegc done");
        if (o.cpython && status == 0) {
            cp.push_back(replay_cpython(g, m, aging));
            if (!cp.back().error.empty()) error(cp.back().error);
            progress("run " + std::to_string(rep + 1) + ": cpython done");
        }
        if (o.boehm && !o.aged && boehm_available() && status == 0) {
            bw.push_back(replay_boehm(g, m));
            if (!bw.back().error.empty()) error(bw.back().error);
        }
        FloorResult f = floor_pass(fg, fg.targets);
        floor_ns.push_back(f.ns);
        if (f.marked != m.live) error("floor pass marked " + std::to_string(f.marked) + ", expected " + std::to_string(m.live));
        FloorResult c = floor_pass(cfg, churn_floor_targets);
        churn_floor_ns.push_back(c.ns);
        if (c.marked != m.live_after_churn())
            error("floor pass after the churn marked " + std::to_string(c.marked) + ", expected " +
                  std::to_string(m.live_after_churn()));
    }
    if (status != 0) return status;

    std::vector<StepInfo> steps = step_table(g, m);
    Summary scg = summarise(cg, steps), scp = summarise(cp, steps), sbw = summarise(bw, steps);
    const size_t kLive = 2;  // index of collect_live in steps
    const size_t kChurnCollect = 4;
    // Per node of the step it stands beside, so that cyclegc/floor compares
    // times: after the churn, the nodes that collection examines.
    // (No live node: no floor.)
    double floor = m.live ? median(floor_ns) / steps[kLive].per : NAN;
    double churn_floor = m.live_after_churn() ? median(churn_floor_ns) / steps[kChurnCollect].per : NAN;
    const size_t kDrop = 5;
    // Boehm has no churn step: its roots are dropped with every live node still there.
    double boehm_drop = NAN;
    if (sbw.ran) {
        std::vector<double> v;
        for (auto &r : bw) v.push_back((r.drop.ns + r.drop_collect.ns) / (m.live ? double(m.live) : 1.0));
        boehm_drop = median(v);
    }

    // --pause-budget: each full collection's longest slice (ms) and slices,
    // the most over the runs.
    const ReplayResult::Collections kCollections[] = {&ReplayResult::collect_garbage, &ReplayResult::collect_live,
                                                      &ReplayResult::churn_collect, &ReplayResult::drop_collect};
    std::string longest, slices, longest_json;
    for (auto collection : kCollections) {
        double most = 0;
        uint64_t count = 0;
        for (const ReplayResult &r : cg) {
            most = std::max(most, (r.*collection).longest_pause_ns);
            count = std::max(count, (r.*collection).pauses);
        }
        longest += (longest.empty() ? "" : " / ") + fmt(most / 1e6, 2);
        slices += (slices.empty() ? "" : " / ") + std::to_string(count);
        longest_json += (longest_json.empty() ? "" : ",") + json_number(most / 1e6, 3);
    }

    if (o.json) {
        std::string out = "{\"graph\":" + json_string(g.name);
        if (o.pause_budget)
            out += ",\"pause_budget_ns\":" + std::to_string(o.pause_budget) + ",\"longest_pause_ms\":[" + longest_json + "]";
        out += ",\"nodes\":" + std::to_string(g.nodes) + ",\"edges\":" + std::to_string(g.edges());
        out += ",\"roots\":" + std::to_string(m.roots) + ",\"root_refs\":" + std::to_string(m.root_refs);
        out += ",\"garbage\":" + std::to_string(m.garbage) + ",\"acyclic_garbage\":" + std::to_string(m.acyclic_garbage);
        out += ",\"live\":" + std::to_string(m.live) + ",\"live_edges\":" + std::to_string(m.live_edges);
        out += ",\"churn_rewrites\":" + std::to_string(m.churn.size());
        out += ",\"python_bytes_per_node\":" + json_number(double(g.python_bytes) / (g.nodes ? g.nodes : 1), 1);
        out += ",\"repeat\":" + std::to_string(o.repeat);
        out += std::string(",\"heap\":") + (o.aged ? "\"aged\"" : "\"fresh\"");
        out += std::string(",\"clock\":") + (use_wall_clock() ? "\"wall\"" : "\"thread_cpu\"");
        out += ",\"expected_freed\":{";
        for (size_t i = 0; i < steps.size(); ++i)
            out += std::string(i ? "," : "") + "\"" + steps[i].key + "\":" + std::to_string(steps[i].expected);
        out += "},\"per\":{";
        for (size_t i = 0; i < steps.size(); ++i)
            out += std::string(i ? "," : "") + "\"" + steps[i].key + "\":" + json_number(steps[i].per, 0);
        out += "}";
        out += ",\"cyclegc\":" + json_summary(scg, steps, true);
        if (scp.ran) out += ",\"cpython\":" + json_summary(scp, steps, true) + ",\"cpython_version\":" + json_string(cpython_version());
        out += ",\"link\":" + json_string(CYCLEGC_BENCH_LINK_NOTE);
        if (sbw.ran) {
            out += ",\"boehm\":{\"build_ns_per_node\":" + json_number(sbw.ns_per[0]) +
                   ",\"collect_garbage_ns_per_node\":" + json_number(sbw.ns_per[1]) +
                   ",\"collect_live_ns_per_node\":" + json_number(sbw.ns_per[kLive]) +
                   ",\"drop_and_collect_ns_per_node\":" + json_number(boehm_drop) +
                   ",\"rss_bytes_per_node\":" + json_number(sbw.rss, 1) + ",\"gc_heap_bytes_per_node\":" + json_number(sbw.heap_bytes, 1) + "}";
        }
        out += ",\"floor\":{\"mark_ns_per_node\":" + json_number(floor) + ",\"marked\":" + std::to_string(m.live) +
               ",\"after_churn_mark_ns_per_node\":" + json_number(churn_floor) +
               ",\"after_churn_marked\":" + std::to_string(m.live_after_churn()) + "}";
        out += ",\"ratios\":{";
        out += "\"cyclegc_collect_live_over_floor\":" + json_number(scg.ns_per[kLive] / floor);
        out += ",\"cyclegc_churn_collect_over_floor\":" + json_number(scg.ns_per[kChurnCollect] / churn_floor);
        if (scp.ran) {
            for (size_t i = 0; i < steps.size(); ++i)
                out += std::string(",\"cpython_over_cyclegc_") + steps[i].key + "\":" + json_number(scp.ns_per[i] / scg.ns_per[i]);
            out += ",\"cpython_over_cyclegc_drop_and_collect\":" + json_number(scp.drop_total / scg.drop_total);
            out += ",\"cpython_over_cyclegc_rss\":" + json_number(scp.rss / scg.rss);
        }
        out += "},\"checks\":\"ok\"}";
        std::printf("%s\n", out.c_str());
        std::fflush(stdout);
        return 0;
    }

    std::printf("\n== %s%s: %u nodes, %llu edges, %llu roots, %llu garbage (%llu acyclic), %llu live; "
                "%zu churn rewrites; median of %d\n",
                g.name.c_str(), o.aged ? " (aged heap)" : "", g.nodes, (unsigned long long)g.edges(), (unsigned long long)m.roots,
                (unsigned long long)m.garbage, (unsigned long long)m.acyclic_garbage, (unsigned long long)m.live,
                m.churn.size(), o.repeat);
    std::printf("%-27s %9s %9s %12s", "step", "per", "freed", "cyclegc ns");
    if (scp.ran) std::printf(" %12s %9s", "cpython ns", "cpy/cgc");
    if (sbw.ran) std::printf(" %10s", "boehm ns");
    std::printf("\n");
    for (size_t i = 0; i < steps.size(); ++i) {
        std::printf("%-27s %9.0f %9llu %12s", steps[i].label, steps[i].per, (unsigned long long)scg.freed[i],
                    fmt(scg.ns_per[i]).c_str());
        if (scp.ran) std::printf(" %12s %9s", fmt(scp.ns_per[i]).c_str(), fmt(scp.ns_per[i] / scg.ns_per[i], 2).c_str());
        if (sbw.ran) {
            std::string b = "-";
            if (i == 0 || i == kLive) b = fmt(sbw.ns_per[i]);
            std::printf(" %10s", b.c_str());
        }
        if (i == kLive || i == kChurnCollect) {
            double f = i == kLive ? floor : churn_floor;
            std::printf("   floor %s ns/node, cyclegc/floor %s", fmt(f, 2).c_str(), fmt(scg.ns_per[i] / f, 2).c_str());
        }
        std::printf("\n");
    }
    std::printf("%-27s %9.0f %9s %12s", "drop + collect the rest", steps[kDrop].per, "", fmt(scg.drop_total).c_str());
    if (scp.ran) std::printf(" %12s %9s", fmt(scp.drop_total).c_str(), fmt(scp.drop_total / scg.drop_total, 2).c_str());
    if (sbw.ran) std::printf(" %10s", fmt(boehm_drop).c_str());
    std::printf("\n");
    std::printf("%-27s %9s %9s %12s", "bytes/node: RSS growth", "", "", fmt(scg.rss).c_str());
    if (scp.ran) std::printf(" %12s %9s", fmt(scp.rss).c_str(), fmt(scp.rss / scg.rss, 2).c_str());
    if (sbw.ran) std::printf(" %10s", fmt(sbw.rss).c_str());
    std::printf("\n%-27s %9s %9s %12s", "bytes/node: malloc in use", "", "", fmt(scg.malloc_bytes).c_str());
    if (sbw.ran) std::printf(" %12s %9s %10s", "", "", (fmt(sbw.heap_bytes) + "*").c_str());
    std::printf("\n");
    if (o.pause_budget)
        std::printf("pause budget %llu ns: longest slice of the four full collections %s ms (slices %s)\n",
                    (unsigned long long)o.pause_budget, longest.c_str(), slices.c_str());
    std::fflush(stdout);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options o = parse(argc, argv);
    set_replay_pause_budget(o.pause_budget);
    if (o.cpython && !cpython_available()) {
        std::fprintf(stderr, "cyclegc-replay: --cpython: %s\n",
                     "this build has no embedded CPython (configure with Python3 Development.Embed found)");
        return 2;
    }
    if (o.boehm && o.aged) std::fprintf(stderr, "cyclegc-replay: --boehm: not with --aged; skipped\n");
    else if (o.boehm && !boehm_available())
        std::fprintf(stderr, "cyclegc-replay: --boehm: this build has no Boehm GC (install libgc-dev); skipped\n");
    if (!o.json && !o.quiet) {
        std::printf("cyclegc-replay: %s ns per node unless noted; 'per' = nodes (or rewrites) the step is divided by",
                    use_wall_clock() ? "wall-clock" : "thread CPU");
        if (o.cpython) std::printf("; CPython %s embedded; cpy/cgc > 1 means cyclegc is faster", cpython_version().c_str());
        std::printf("; linked: %s", CYCLEGC_BENCH_LINK_NOTE);
        std::printf("\n");
    }
    std::vector<std::function<Graph()>> sources;
    for (const std::string &f : o.files) sources.push_back([f] { return read_graph(f); });
    for (auto generated : o.generated)
        sources.push_back([generated] {
            auto [kind, n] = generated;
            return kind == 'r' ? make_random_graph(n) : make_chain_graph(n);
        });
    int status = 0;
    std::vector<std::string> errors;
    for (auto &source : sources) {
        Graph g;
        try {
            Timer t;
            g = source();
            if (!o.quiet)
                std::fprintf(stderr, "[%s] loaded %u nodes, %llu edges in %.0f ms\n", g.name.c_str(), g.nodes,
                             (unsigned long long)g.edges(), t.ns() / 1e6);
            if (!o.save.empty()) {
                // The stats line lets the reader check the file against the graph.
                Model sm = build_model(g, 0);
                std::vector<std::string> comments = g.comments;
                comments.push_back("# stats: nodes=" + std::to_string(g.nodes) + " edges=" + std::to_string(g.edges()) +
                                   " roots=" + std::to_string(sm.roots) + " garbage=" + std::to_string(sm.garbage));
                write_graph(g, o.save, comments);
                if (!o.quiet) std::fprintf(stderr, "[%s] saved to %s\n", g.name.c_str(), o.save.c_str());
            }
        } catch (const std::exception &e) {
            std::fprintf(stderr, "cyclegc-replay: %s\n", e.what());
            status = 1;
            continue;
        }
        if (run_graph(g, o, errors) != 0) status = 1;
    }
    if (!errors.empty()) {
        std::fprintf(stderr, "cyclegc-replay: %zu check(s) failed\n", errors.size());
    }
    return status;
}
