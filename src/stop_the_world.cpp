// The threads attached to a shared heap and the stop-the-world protocol of
// its collections (shared_heap.hpp).
#include "heap.hpp"
#include "shared_heap.hpp"

using namespace cyclegc::internal;

extern "C" {

void cgc_thread_detach(void) {}

void cgc_thread_attach(void) {}

}  // extern "C"
