// Checks of an object that the allocation, tracking, deallocation and Python
// 2.0 pointer files share.
#pragma once

#include "heap.hpp"

namespace cyclegc::internal {

// Refuses use of an object whose slot is free already (a freed object),
// reporting `function`, the pointer it was given and what is refused.
// (A freed object's header stays readable: poison.hpp. A large object's
// page was given back: it reads as zeros, no type; `op` is null for raw
// memory, whose object offset a free slot no longer records.)
inline bool refuse_if_freed(const GcMeta &meta, const char *function, const void *memory, const cgc_object *op,
                            const char *refused) {
    if (meta.flags & kAllocated) return false;
    if (op && op->ob_type)
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' was freed already; %s", function, memory,
               type_name_of(op), refused);
    else
        report(CGC_ERR_MISUSE, "%s: memory %p was freed already; %s", function, memory, refused);
    return true;
}

}  // namespace cyclegc::internal
