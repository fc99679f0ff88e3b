// Census and growth by type (objgraph's typestats and show_growth).
#include "census.hpp"

#include "guard.hpp"

#include <cyclegc/diagnostics.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace cyclegc::internal::diag {
namespace {

bool more_common(const std::pair<cgc_type *, TypeTotals> &a, const std::pair<cgc_type *, TypeTotals> &b) {
    if (a.second.count != b.second.count) return a.second.count > b.second.count;
    if (a.second.bytes != b.second.bytes) return a.second.bytes > b.second.bytes;
    return std::strcmp(type_name(a.first), type_name(b.first)) < 0;
}

// The lines and totals of `out` from a census (changes left at 0).
bool fill(cgc_diag_type_list *out, size_t lines, const char *function) {
    out->types = static_cast<cgc_diag_type_stats *>(std::calloc(lines + 1, sizeof(cgc_diag_type_stats)));
    if (!out->types) {
        report(CGC_ERR_MEMORY, "%s: out of memory", function);
        return false;
    }
    out->count = static_cast<cgc_ssize_t>(lines);
    return true;
}

void set_line(cgc_diag_type_stats &line, cgc_type *type, const TypeTotals &totals) {
    line.type_name = type_name(type);
    line.type = type;
    line.count = totals.count;
    line.bytes = totals.bytes;
}

bool check_out(cgc_diag_type_list *out, const char *function) {
    if (!out) {
        report(CGC_ERR_MISUSE, "%s: the output census is NULL", function);
        return false;
    }
    *out = cgc_diag_type_list{};
    return true;
}

int census_into(Heap &heap, cgc_diag_type_list *out, const char *function) {
    TypeCensus census = take_census(heap);
    if (!fill(out, census.size(), function)) return -1;
    for (size_t i = 0; i < census.size(); ++i) {
        set_line(out->types[i], census[i].first, census[i].second);
        out->total_objects += census[i].second.count;
        out->total_bytes += census[i].second.bytes;
    }
    return 0;
}

// The types of `now` and `before` whose totals differ, with their changes.
int growth_into(const TypeCensus &now, std::unordered_map<cgc_type *, TypeTotals> &before, cgc_diag_type_list *out,
                const char *function) {
    std::vector<cgc_diag_type_stats> lines;
    for (const auto &[type, totals] : now) {
        TypeTotals old = before.count(type) ? before[type] : TypeTotals{};
        before.erase(type);
        out->total_objects += totals.count;
        out->total_bytes += totals.bytes;
        if (old.count == totals.count && old.bytes == totals.bytes) continue;
        cgc_diag_type_stats line{};
        set_line(line, type, totals);
        line.count_change = totals.count - old.count;
        line.bytes_change = totals.bytes - old.bytes;
        lines.push_back(line);
    }
    for (const auto &[type, old] : before) {  // types with no object left
        cgc_diag_type_stats line{};
        set_line(line, type, TypeTotals{});
        line.count_change = -old.count;
        line.bytes_change = -old.bytes;
        lines.push_back(line);
    }
    std::stable_sort(lines.begin(), lines.end(), [](const cgc_diag_type_stats &a, const cgc_diag_type_stats &b) {
        return a.count_change > b.count_change;
    });
    if (!fill(out, lines.size(), function)) return -1;
    std::copy(lines.begin(), lines.end(), out->types);
    return 0;
}

}  // namespace

TypeCensus take_census(Heap &heap) {
    std::unordered_map<cgc_type *, TypeTotals> by_type;
    cgc_type *last_type = nullptr;
    TypeTotals *last = nullptr;
    for_each_tracked(heap.space, [&](cgc_object *op, GcMeta &meta) {
        if (in_collection_set(meta)) return;
        if (op->ob_type != last_type) {  // (objects of a type tend to sit together)
            last_type = op->ob_type;
            last = &by_type[last_type];
        }
        ++last->count;
        last->bytes += page_of(op)->slot_size;
    });
    TypeCensus census(by_type.begin(), by_type.end());
    std::sort(census.begin(), census.end(), more_common);
    return census;
}

}  // namespace cyclegc::internal::diag

using namespace cyclegc::internal;
using namespace cyclegc::internal::diag;

extern "C" {

int cgc_diag_census(cgc_diag_type_list *out) {
    const char *function = "cgc_diag_census (objgraph.typestats)";
    if (!check_out(out, function)) return -1;
    return guarded(function, [&] { return census_into(current_heap(), out, function); });
}

int cgc_diag_growth(cgc_diag_type_list *out) {
    const char *function = "cgc_diag_growth (objgraph.growth)";
    if (!check_out(out, function)) return -1;
    Heap &heap = current_heap();
    return guarded(function, [&] {
        TypeCensus now = take_census(heap);
        auto &baseline = state_of(heap).growth_baseline;
        std::unordered_map<cgc_type *, TypeTotals> before;
        before.swap(baseline);
        baseline.insert(now.begin(), now.end());
        return growth_into(now, before, out, function);
    });
}

void cgc_diag_census_release(cgc_diag_type_list *census) {
    if (!census) return;
    std::free(census->types);
    *census = cgc_diag_type_list{};
}

void cgc_diag_show_most_common_types(cgc_ssize_t limit) {
    cgc_diag_type_list census;
    if (cgc_diag_census(&census) < 0) return;
    Heap &heap = current_heap();
    for (cgc_ssize_t i = 0; i < census.count && (limit <= 0 || i < limit); ++i)
        log_line(heap, "%-40s %12td %14td bytes", census.types[i].type_name, census.types[i].count,
                 census.types[i].bytes);
    cgc_diag_census_release(&census);
}

void cgc_diag_show_growth(cgc_ssize_t limit) {
    cgc_diag_type_list census;
    if (cgc_diag_growth(&census) < 0) return;
    Heap &heap = current_heap();
    for (cgc_ssize_t i = 0; i < census.count && (limit <= 0 || i < limit); ++i) {
        const cgc_diag_type_stats &line = census.types[i];
        log_line(heap, "%-40s %12td %+12td %+14td bytes", line.type_name, line.count, line.count_change,
                 line.bytes_change);
    }
    cgc_diag_census_release(&census);
}

}  // extern "C"
