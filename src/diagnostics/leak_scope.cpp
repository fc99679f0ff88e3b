// A leak-check scope for tests, as LeakSanitizer is for malloc: the tracked
// objects alive when it begins are remembered (by address); when it ends, a
// full collection runs and every tracked object not remembered is a leak,
// reported by type with a retainer chain.
//
// An object freed inside the scope whose slot a leaked object then takes
// has the remembered address: that leak is missed (the scope keeps no
// mark on the heap's objects, which diagnostics never write to).
#include "leak_report.hpp"

#include <cyclegc/diagnostics.h>

#include <algorithm>
#include <new>

struct cgc_diag_leak_scope {
    cyclegc::internal::Heap *heap;
    std::vector<cgc_object *> before;  // sorted
};

using namespace cyclegc::internal;
using namespace cyclegc::internal::diag;

namespace {

cgc_ssize_t finish_scope(cgc_diag_leak_scope &scope, char **report_out) {
    cgc_collect(CGC_NUM_GENERATIONS - 1);
    auto made_inside = [&](cgc_object *op) { return !std::binary_search(scope.before.begin(), scope.before.end(), op); };
    size_t count = 0;
    std::vector<std::string> lines =
        describe_leaks(*scope.heap, made_inside, "made inside the leak-check scope outlive it", &count);
    if (report_out) *report_out = count ? join_lines(lines) : nullptr;
    return static_cast<cgc_ssize_t>(count);
}

}  // namespace

extern "C" {

cgc_diag_leak_scope *cgc_diag_leak_scope_begin(void) {
    Heap &heap = current_heap();
    try {
        auto *scope = new cgc_diag_leak_scope{&heap, {}};
        for_each_tracked(heap.space, [&](cgc_object *op, GcMeta &meta) {
            if (!in_collection_set(meta)) scope->before.push_back(op);
        });
        std::sort(scope->before.begin(), scope->before.end());
        return scope;
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "cgc_diag_leak_scope_begin: out of memory");
        return nullptr;
    }
}

cgc_ssize_t cgc_diag_leak_scope_end(cgc_diag_leak_scope *scope, char **report_out) {
    if (report_out) *report_out = nullptr;
    if (!scope) {
        report(CGC_ERR_MISUSE, "cgc_diag_leak_scope_end: the scope is NULL");
        return -1;
    }
    if (scope->heap != &current_heap()) {
        report(CGC_ERR_MISUSE, "cgc_diag_leak_scope_end: the scope began on another heap (the current heap changed)");
        delete scope;
        return -1;
    }
    cgc_ssize_t leaked = -1;
    try {
        leaked = finish_scope(*scope, report_out);
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "cgc_diag_leak_scope_end: out of memory");
    }
    delete scope;
    return leaked;
}

}  // extern "C"
