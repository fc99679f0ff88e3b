// What every diagnostic's C entry point does with running out of memory
// (report it, naming the function, and return -1), and the per-heap switches.
#pragma once

#include "state.hpp"

#include <new>

namespace cyclegc::internal::diag {

// body() for an entry point that returns an int-like status: -1 (reported)
// if it ran out of memory.
template <typename Body>
auto guarded(const char *function, Body body) -> decltype(body()) {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "%s: out of memory", function);
        return -1;
    }
}

// Sets one of the current heap's switches; returns the previous setting
// (0 or 1), or -1 when out of memory.
inline int set_switch(bool State::*which, int on, const char *function) {
    return guarded(function, [&] {
        State &state = state_of(current_heap());
        int previous = state.*which;
        state.*which = on != 0;
        return previous;
    });
}

}  // namespace cyclegc::internal::diag
