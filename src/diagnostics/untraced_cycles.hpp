// The traverse checker's second question: cycles that only references a
// tp_traverse skips hold together. Such a cycle is invisible to the
// collector (its members look held from outside), so it lives forever.
#pragma once

#include "heap_graph.hpp"

#include <string>
#include <unordered_set>
#include <vector>

namespace cyclegc::internal::diag {

// One line per type whose objects sit in cycles of untraced references that
// nothing else holds (see docs/diagnostics.md, "The traverse checker"), in
// order of first appearance; types in `skip` are left out and the types
// reported are added to it. Throws std::bad_alloc.
std::vector<std::string> find_untraced_cycles(const HeapGraph &graph, std::unordered_set<const cgc_type *> &skip);

}  // namespace cyclegc::internal::diag
