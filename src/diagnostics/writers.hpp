// Writers of the heap's graph to files in other tools' formats.
#pragma once

#include "heap_graph.hpp"

#include <cstdio>

namespace cyclegc::internal::diag {

// Chrome DevTools' .heapsnapshot (heapsnapshot.cpp). False if a write failed.
bool write_heapsnapshot(const HeapGraph &graph, std::FILE *file);
// The project's `cgcgraph 1` text (cgcgraph.cpp).
bool write_cgcgraph(const HeapGraph &graph, std::FILE *file);
// Graphviz DOT of `target` and its referrers up to `max_depth` levels (dot.cpp).
bool write_backrefs_dot(const HeapGraph &graph, uint32_t target, int max_depth, std::FILE *file);

}  // namespace cyclegc::internal::diag
