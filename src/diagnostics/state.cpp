// The per-heap diagnostics state's life: made on first use, freed with the heap.
#include "state.hpp"

namespace cyclegc::internal::diag {

State &state_of(Heap &heap) {
    if (!heap.diagnostics.state) heap.diagnostics.state = new State();
    return *heap.diagnostics.state;
}

void destroy_state(State *state) { delete state; }

}  // namespace cyclegc::internal::diag
