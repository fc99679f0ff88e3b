// The diagnostics' state of one heap (Heap::diagnostics), made on first use.
#pragma once

#include "../heap.hpp"

#include <unordered_map>
#include <unordered_set>

namespace cyclegc::internal::diag {

struct TypeTotals {
    cgc_ssize_t count = 0;
    cgc_ssize_t bytes = 0;
};

struct State {
    // The census of the previous cgc_diag_growth call, by type.
    std::unordered_map<cgc_type *, TypeTotals> growth_baseline;
    bool report_leaks = false;    // a leak report when the heap shuts down
    bool check_traverse = false;  // the traverse checker during and after collections
    // The types the check after full collections has reported (once each).
    std::unordered_set<const cgc_type *> untraced_reported;
};

// The heap's state, made if needed (throws std::bad_alloc).
State &state_of(Heap &heap);

}  // namespace cyclegc::internal::diag
