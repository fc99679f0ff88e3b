// The traverse checker: types whose tp_traverse (or C++ trace) disagrees
// with their reference counts or with their tp_clear.
#pragma once

#include "../heap.hpp"

namespace cyclegc::internal::diag {

// Called by the collector right after an object's tp_clear, while it still
// holds the object, when the heap has diagnostics state: if the traverse
// check is on (cgc_diag_set_traverse_check), a tp_traverse that still
// visits something is reported (CGC_ERR_TYPE, naming the type).
void check_after_clear(Heap &heap, cgc_object *op);

// Called by the collector after a full collection, when the heap has
// diagnostics state: if the traverse check is on, reports (CGC_ERR_TYPE)
// the types whose objects sit in cycles that only untraced references hold
// (find_untraced_cycles), each once per heap.
void check_after_full_collection(Heap &heap);

}  // namespace cyclegc::internal::diag
