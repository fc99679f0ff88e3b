// Leak reports: the objects a predicate calls leaked, grouped by type with
// counts, bytes and one retainer chain per type.
#pragma once

#include "heap_graph.hpp"

#include <functional>
#include <string>
#include <vector>

namespace cyclegc::internal::diag {

// The report's lines (none when nothing leaked) about the tracked objects
// of `heap` for which leaked(object) is true; `what` opens the first line
// ("still alive after the final collections"). Throws std::bad_alloc.
std::vector<std::string> describe_leaks(Heap &heap, const std::function<bool(cgc_object *)> &leaked,
                                        const char *what, size_t *leak_count);

// Lines joined with newlines, in malloc'd memory (nullptr when out of memory).
char *join_lines(const std::vector<std::string> &lines);

// Called as a heap shuts down (cgc_finalize, after its final collections):
// logs a leak report if the heap asked for one (cgc_diag_set_leak_report,
// or CYCLEGC_LEAK_REPORT=1 in the environment).
void report_leaks_at_shutdown(Heap &heap);

}  // namespace cyclegc::internal::diag
