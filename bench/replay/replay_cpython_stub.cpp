// Built when no embedded CPython was found: --cpython reports that.
#include "replay.hpp"

namespace cgcbench {

bool cpython_available() { return false; }
std::string cpython_version() { return "unavailable"; }
ReplayResult replay_cpython(const Graph &, const Model &, const Aging &) {
    ReplayResult r;
    r.error = "cpython: not built in";
    return r;
}

}  // namespace cgcbench
