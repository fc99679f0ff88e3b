// Poisoning of free GC slots for AddressSanitizer and valgrind's memcheck.
//
// GC objects live in the library's own pages (pages.hpp), so neither tool
// sees a use of a freed object: its slot stays ordinary, addressable memory.
// These hooks tell the tools what is free:
//
// * poison_free_slot: a released slot becomes inaccessible, except the 16
//   bytes of the object's header (cgc_object: ob_refcnt, ob_type). The header
//   stays readable on purpose: a Py_DECREF too many on a freed object finds
//   its count at 0 and is reported by the library (CGC_ERR_CORRUPTION, "below
//   zero") instead of freeing it again; that is a documented feature.
// * poison_region: the never-used slots of a new page.
// * unpoison_slot: a slot handed out again, before it is zeroed (memcheck:
//   undefined until the zeroing defines it).
// * unpoison_zeroed: memory handed out that is already zero (a never-used
//   slot, a page fresh from the arena): accessible and defined.
//
// Under AddressSanitizer (-fsanitize=address: CYCLEGC_SANITIZE=ON) the hooks
// use ASAN_(UN)POISON_MEMORY_REGION. For memcheck they use the client
// requests of <valgrind/memcheck.h>, compiled only with -DCYCLEGC_VALGRIND=1
// (the CMake option CYCLEGC_VALGRIND) and when the header exists: a client
// request costs a few instructions even outside valgrind. Otherwise every
// hook is empty and kPoisonSlots is false, so the callers' fast paths compile
// to exactly what they were without them.
#pragma once

#include <cyclegc/cyclegc.h>

#include <cstddef>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CYCLEGC_ASAN 1
#endif
#endif
#if !defined(CYCLEGC_ASAN) && defined(__SANITIZE_ADDRESS__)
#define CYCLEGC_ASAN 1
#endif
#ifndef CYCLEGC_ASAN
#define CYCLEGC_ASAN 0
#endif
#if CYCLEGC_ASAN
#include <sanitizer/asan_interface.h>
#endif

#if defined(CYCLEGC_VALGRIND) && CYCLEGC_VALGRIND && __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define CYCLEGC_MEMCHECK 1
#else
#define CYCLEGC_MEMCHECK 0
#endif

namespace cyclegc::internal {

// Whether any hook does something: callers guard the work of computing
// their arguments with `if constexpr (kPoisonSlots)`.
constexpr bool kPoisonSlots = CYCLEGC_ASAN || CYCLEGC_MEMCHECK;

// What stays readable of a freed object: ob_refcnt and ob_type.
constexpr size_t kPoisonKeptHeader = sizeof(cgc_object);

// Makes [p, p + size) inaccessible.
inline void poison_region([[maybe_unused]] void *p, [[maybe_unused]] size_t size) {
#if CYCLEGC_ASAN
    ASAN_POISON_MEMORY_REGION(p, size);
#endif
#if CYCLEGC_MEMCHECK
    VALGRIND_MAKE_MEM_NOACCESS(p, size);
#endif
}

// A released slot of `size` bytes whose object started `object_offset`
// bytes in: all of it inaccessible but the object's header.
inline void poison_free_slot([[maybe_unused]] void *slot, [[maybe_unused]] size_t size,
                             [[maybe_unused]] size_t object_offset) {
    if constexpr (kPoisonSlots) {
        auto *bytes = static_cast<char *>(slot);
        size_t header_end = object_offset + kPoisonKeptHeader;
        if (header_end > size) return;  // (cannot happen for an object: left alone)
        if (object_offset > 0) poison_region(bytes, object_offset);
        if (header_end < size) poison_region(bytes + header_end, size - header_end);
    }
}

// A slot about to be handed out again and zeroed: accessible (memcheck:
// undefined until written).
inline void unpoison_slot([[maybe_unused]] void *p, [[maybe_unused]] size_t size) {
#if CYCLEGC_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, size);
#endif
#if CYCLEGC_MEMCHECK
    VALGRIND_MAKE_MEM_UNDEFINED(p, size);
#endif
}

// Memory handed out that already holds zeros: accessible and defined.
inline void unpoison_zeroed([[maybe_unused]] void *p, [[maybe_unused]] size_t size) {
#if CYCLEGC_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, size);
#endif
#if CYCLEGC_MEMCHECK
    VALGRIND_MAKE_MEM_DEFINED(p, size);
#endif
}

}  // namespace cyclegc::internal
