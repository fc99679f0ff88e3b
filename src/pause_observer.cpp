// cgc_set_pause_observer: a call at the end of every pause the heap's pause
// statistics record (Heap::record_pause), for a program that logs them.
#include "heap.hpp"

using namespace cyclegc::internal;

extern "C" {

void cgc_set_pause_observer(cgc_pause_observer observer, void *context) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    heap.pause_observer = observer;
    heap.pause_observer_context = context;
}

}  // extern "C"
