// Live tracked objects by type (count and bytes), read from the pages'
// metadata and each object's type: no traversal.
#pragma once

#include "state.hpp"

#include <utility>
#include <vector>

namespace cyclegc::internal::diag {

using TypeCensus = std::vector<std::pair<cgc_type *, TypeTotals>>;

// The heap's census, most numerous type first (throws std::bad_alloc).
TypeCensus take_census(Heap &heap);

}  // namespace cyclegc::internal::diag
