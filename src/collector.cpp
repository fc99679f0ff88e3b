// The cycle collector.
//
// Reference counting frees every object whose count drops to zero. What it
// cannot free are groups of objects that refer to each other (cycles) and
// that nothing outside the group refers to. A collection finds them among
// the tracked objects of one generation (and the younger ones), the
// "candidates", in four steps (see docs/design.md for a worked example):
//
//  1. Find the unreachable set (no user code runs but tp_traverse):
//     a. gc_refs := ob_refcnt for every candidate;
//     b. for every reference from a candidate to a candidate (visited by
//        tp_traverse), decrement the target's gc_refs. What remains is the
//        number of references from outside the candidates: from untracked
//        objects, older generations, C variables;
//     c. candidates with gc_refs > 0 are reachable, and so is everything
//        they reach: one forward scan of the list moves every candidate
//        that looks unreachable to an "unreachable" list, and moves it back
//        (to the end of the list being scanned) when a reachable object
//        turns out to reach it. No recursion, no allocation: the state lives
//        in the two header words (gc_head.hpp).
//     Survivors move to the next older generation. Unreachable objects with
//     a legacy finalizer (tp_del), and all they reach, are set apart as
//     uncollectable (kept, and listed in the garbage list).
//  2. Weak references to unreachable objects are cleared, and the callbacks
//     of those weak references that are themselves reachable run: no
//     callback can see a half-destroyed object.
//     Finalize (PEP 442): call tp_finalize on every unreachable object not
//     finalized before, before any tp_clear. A finalizer may do anything:
//     resurrect objects, free others, create garbage, ask for a collection
//     (refused while one runs).
//  3. If any finalizer ran, repeat step 1 on the unreachable set with the
//     current counts: an object a finalizer made reachable again, and all it
//     reaches, survives ("resurrection").
//  4. Clear weak references made meanwhile, then clear: take the first unreachable object, call its tp_clear (dropping
//     its references breaks the cycle, and reference counting frees the
//     rest, which unlinks itself from the list); an object still first
//     afterwards (no tp_clear, or kept alive) moves to the old generation.
//
// An object's states: untracked -> tracked in generation g -> candidate
// (kCollecting) -> reachable (back in a generation) or unreachable ->
// finalized (kFinalized, for life) -> cleared -> freed by its tp_dealloc.
//
// What a type must honour: tp_traverse visits every reference the object
// owns, exactly once, and nothing else, and changes nothing; tp_clear leaves
// the object valid; tp_dealloc untracks before it invalidates references.
// Broken counts (more references found than the count says) are reported
// and the object is kept alive instead of freed.
#include "heap.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace cyclegc::internal {
namespace {

// gc_refs given to an object whose count cannot be trusted: it stays
// reachable for the rest of the collection, whatever else is subtracted.
constexpr cgc_ssize_t kBrokenRefs = cgc_ssize_t(1) << 40;

void expect_phase(const Heap &heap, Phase phase) {
#if defined(CYCLEGC_DEBUG) && CYCLEGC_DEBUG >= 1
    if (heap.phase != phase) {
        report(CGC_ERR_CORRUPTION, "collector: internal phase error (%d, expected %d)",
               static_cast<int>(heap.phase), static_cast<int>(phase));
        std::abort();
    }
#else
    (void)heap;
    (void)phase;
#endif
}

void traverse(cgc_object *op, cgc_visitproc visit, void *arg) {
    if (cgc_traverseproc traverse_function = op->ob_type->tp_traverse) traverse_function(op, visit, arg);
}

// Step 1a. Returns the number of candidates.
cgc_ssize_t init_refs(GcList &candidates) {
    cgc_ssize_t count = 0;
    for (GcHead *h = candidates.first(); h != candidates.end(); h = next_of(h)) {
        cgc_object *op = object_of(h);
        cgc_ssize_t refcnt = op->ob_refcnt;
        if (refcnt <= 0) {
            report(CGC_ERR_CORRUPTION,
                   "collector: tracked object %p of type '%s' has reference count %td: its "
                   "tp_dealloc did not untrack it, or a Py_DECREF is too many; kept alive",
                   static_cast<void *>(op), type_name_of(op), refcnt);
            refcnt = kBrokenRefs;
        }
        set_refs(h, refcnt);
        ++count;
    }
    return count;
}

int visit_subtract(cgc_object *child, void *parent) {
    if (!has_gc_head(child)) return 0;
    GcHead *h = head_of(child);
    if (!is_collecting(h)) return 0;
    cgc_ssize_t refs = refs_of(h);
    if (refs == 0) {
        auto *from = static_cast<cgc_object *>(parent);
        report(CGC_ERR_CORRUPTION,
               "collector: object %p of type '%s' has reference count %td, but more references "
               "to it were found (the last from %p of type '%s'): a tp_traverse visits a "
               "reference it does not own, or a Py_INCREF is missing; the object is kept alive",
               static_cast<void *>(child), type_name_of(child), child->ob_refcnt,
               static_cast<void *>(from), type_name_of(from));
        refs = kBrokenRefs + 1;
    }
    set_refs(h, refs - 1);
    return 0;
}

// Step 1b.
void subtract_internal_refs(GcList &candidates) {
    for (GcHead *h = candidates.first(); h != candidates.end(); h = next_of(h))
        traverse(object_of(h), visit_subtract, object_of(h));
}

// Appends `h` to `unreachable`, tagged: its "prev" becomes an address again.
void move_to_unreachable(GcHead *h, GcList &unreachable) {
    GcHead *tail = unreachable.last();
    uintptr_t tail_tag = tail == unreachable.end() ? 0 : kUnreachableTag;
    tail->link[0] = reinterpret_cast<uintptr_t>(h) | tail_tag;
    h->link[0] = reinterpret_cast<uintptr_t>(unreachable.end()) | kUnreachableTag;
    h->link[1] = reinterpret_cast<uintptr_t>(tail) | (h->link[1] & kLifetimeFlags) | kCollecting;
    unreachable.sentinel.link[1] = reinterpret_cast<uintptr_t>(h);
}

int visit_reachable(cgc_object *child, void *list) {
    if (!has_gc_head(child)) return 0;
    GcHead *h = head_of(child);
    if (!is_collecting(h)) return 0;  // not a candidate, or already scanned
    if (is_tagged_unreachable(h)) {
        // Wrongly thought unreachable: unlink it from the (tagged) list...
        GcHead *prev = prev_of(h);
        GcHead *next = next_of(h);
        prev->link[0] = reinterpret_cast<uintptr_t>(next) | (prev->link[0] & kUnreachableTag);
        next->link[1] = reinterpret_cast<uintptr_t>(prev) | (next->link[1] & kFlagMask);
        // ...and put it back at the end of the list being scanned, which is
        // singly linked now; its sentinel's "prev" still names the tail.
        auto &candidates = *static_cast<GcList *>(list);
        set_next(candidates.last(), h);
        set_next(h, candidates.end());
        candidates.sentinel.link[1] = reinterpret_cast<uintptr_t>(h);
        set_refs(h, 1);
    } else if (refs_of(h) == 0) {
        set_refs(h, 1);  // ahead in the scan: it will be scanned as reachable
    }
    return 0;
}

// Step 1c. Leaves the reachable candidates in `candidates` (a proper list
// again, kCollecting cleared) and the others in `unreachable` (kCollecting
// set, tags cleared). Returns the number of unreachable objects.
cgc_ssize_t move_unreachable(GcList &candidates, GcList &unreachable) {
    GcHead *prev = candidates.end();
    GcHead *h = candidates.first();
    while (h != candidates.end()) {
        if (refs_of(h) > 0) {
            traverse(object_of(h), visit_reachable, &candidates);
            h->link[1] = reinterpret_cast<uintptr_t>(prev) | (h->link[1] & kLifetimeFlags);
            prev = h;
            h = next_of(h);
        } else {
            GcHead *next = next_of(h);
            set_next(prev, next);
            move_to_unreachable(h, unreachable);
            h = next;
        }
    }
    candidates.sentinel.link[1] = reinterpret_cast<uintptr_t>(prev);
    cgc_ssize_t count = 0;
    for (GcHead *u = unreachable.first(); u != unreachable.end(); u = next_of(u)) {
        u->link[0] &= ~kUnreachableTag;
        ++count;
    }
    return count;
}

// DEBUG_SAVEALL: the object goes to the garbage list instead of being cleared.
void save_as_garbage(Heap &heap, cgc_object *op) {
    try {
        heap.garbage.push_back(op);
        cgc_incref(op);
    } catch (...) {
        report(CGC_ERR_MEMORY, "collector: out of memory for the garbage list");
    }
}

struct Found {
    cgc_ssize_t candidates;
    cgc_ssize_t unreachable;
};

// Step 1 as a whole.
Found find_unreachable(Heap &heap, GcList &candidates, GcList &unreachable) {
    Phase outer = heap.phase;
    heap.phase = Phase::finding_unreachable;
    Found found{};
    found.candidates = init_refs(candidates);
    subtract_internal_refs(candidates);
    found.unreachable = move_unreachable(candidates, unreachable);
    heap.phase = outer;
    return found;
}

// Step 2. Returns whether any user code ran.
bool finalize_garbage(Heap &heap, GcList &unreachable) {
    heap.phase = Phase::finalizing;
    GcList seen;
    bool ran = false;
    // Take from the head: a finalizer may free (unlink) any member.
    while (!unreachable.empty()) {
        GcHead *h = unreachable.first();
        unlink(h);
        seen.append(h);
        cgc_object *op = object_of(h);
        cgc_destructor finalize = op->ob_type->tp_finalize;
        if (!finalize || is_finalized(h)) continue;
        set_finalized(h);
        cgc_incref(op);
        call_user_code("tp_finalize", op, [&] { finalize(op); });
        cgc_decref(op);
        ran = true;
    }
    unreachable.splice(seen);
    return ran;
}

// Step 3. Resurrected objects join `old`.
void keep_resurrected(Heap &heap, GcList &unreachable, GcList &old) {
    heap.phase = Phase::checking_resurrection;
    GcList still_unreachable;
    find_unreachable(heap, unreachable, still_unreachable);
    old.splice(unreachable);
    unreachable.splice(still_unreachable);
}

// Step 4.
void clear_garbage(Heap &heap, GcList &unreachable, GcList &old) {
    heap.phase = Phase::clearing;
    bool save_all = (heap.debug_flags & CGC_DEBUG_SAVEALL) != 0;
    while (!unreachable.empty()) {
        GcHead *h = unreachable.first();
        cgc_object *op = object_of(h);
        if (save_all) {
            save_as_garbage(heap, op);
        } else if (cgc_inquiry clear = op->ob_type->tp_clear) {
            cgc_incref(op);
            call_user_code("tp_clear", op, [&] { clear(op); });
            cgc_decref(op);
        }
        if (unreachable.first() == h) {  // survived its clear
            unlink(h);
            clear_collecting(h);
            old.append(h);
        }
    }
}

// Set apart unreachable objects with a legacy finalizer (tp_del), and all
// they reach: CPython cannot know a safe order to run such finalizers in a
// cycle, so they are never run, and the objects stay alive (uncollectable).
void move_legacy_finalizers(GcList &unreachable, GcList &uncollectable) {
    for (GcHead *h = unreachable.first(); h != unreachable.end();) {
        GcHead *next = next_of(h);
        if (object_of(h)->ob_type->tp_del) {
            unlink(h);
            clear_collecting(h);
            uncollectable.append(h);
        }
        h = next;
    }
    for (GcHead *h = uncollectable.first(); h != uncollectable.end(); h = next_of(h)) {
        traverse(object_of(h), [](cgc_object *child, void *list) {
            if (!has_gc_head(child)) return 0;
            GcHead *ch = head_of(child);
            if (is_collecting(ch)) {
                unlink(ch);
                clear_collecting(ch);
                static_cast<GcList *>(list)->append(ch);
            }
            return 0;
        }, &uncollectable);
    }
}

void log_objects(Heap &heap, GcList &list, const char *what) {
    for (GcHead *h = list.first(); h != list.end(); h = next_of(h))
        log_line(heap, "gc: %s <%s %p>", what, type_name_of(object_of(h)), static_cast<void *>(object_of(h)));
}

// Uncollectable objects join `old`; those with tp_del (all of them under
// DEBUG_SAVEALL) are listed in the garbage list. Returns how many there were.
cgc_ssize_t keep_uncollectable(Heap &heap, GcList &uncollectable, GcList &old) {
    cgc_ssize_t count = 0;
    bool save_all = (heap.debug_flags & CGC_DEBUG_SAVEALL) != 0;
    if (heap.debug_flags & CGC_DEBUG_UNCOLLECTABLE) log_objects(heap, uncollectable, "uncollectable");
    for (GcHead *h = uncollectable.first(); h != uncollectable.end(); h = next_of(h)) {
        cgc_object *op = object_of(h);
        if (save_all || op->ob_type->tp_del) save_as_garbage(heap, op);
        ++count;
    }
    old.splice(uncollectable);
    return count;
}

void update_long_lived(Heap &heap, int generation, cgc_ssize_t survivors) {
    if (generation == CGC_NUM_GENERATIONS - 2) heap.long_lived_pending += survivors;
    if (generation == CGC_NUM_GENERATIONS - 1) {
        heap.long_lived_pending = 0;
        heap.long_lived_total = survivors;
    }
}

void invoke_callbacks(Heap &heap, const char *phase, const cgc_collection_info &info) {
    if (heap.callbacks.empty()) return;
    Phase outer = heap.phase;
    heap.phase = Phase::callbacks;  // a collection requested from here returns 0
    auto callbacks = heap.callbacks;  // a callback may add or remove callbacks
    for (auto &[callback, context] : callbacks)
        call_user_code("a collection callback", nullptr, [&] { callback(phase, &info, context); });
    heap.phase = outer;
}

void log_generation_sizes(Heap &heap, int generation) {
    log_line(heap, "gc: collecting generation %d...", generation);
    log_line(heap, "gc: objects in each generation: %td %td %td", heap.generations[0].objects.size(),
             heap.generations[1].objects.size(), heap.generations[2].objects.size());
    log_line(heap, "gc: objects in permanent generation: %td", heap.permanent.size());
}

struct Outcome {
    cgc_ssize_t candidates = 0;
    cgc_ssize_t collected = 0;
    cgc_ssize_t uncollectable = 0;
};

// Steps 1 to 4 on generation `generation` and the younger ones.
Outcome run_collection(Heap &heap, int generation) {
    Generation *gens = heap.generations;
    GcList &candidates = gens[generation].objects;
    for (int younger = 0; younger < generation; ++younger) candidates.splice(gens[younger].objects);
    bool oldest = generation == CGC_NUM_GENERATIONS - 1;
    GcList &old = oldest ? candidates : gens[generation + 1].objects;
    if (!oldest) gens[generation + 1].count++;
    for (int g = 0; g <= generation; ++g) gens[g].count = 0;

    Outcome outcome;
    GcList unreachable;
    Found found = find_unreachable(heap, candidates, unreachable);
    outcome.candidates = found.candidates;
    update_long_lived(heap, generation, found.candidates - found.unreachable);
    if (!oldest) old.splice(candidates);

    GcList uncollectable;
    move_legacy_finalizers(unreachable, uncollectable);
    if (heap.debug_flags & CGC_DEBUG_COLLECTABLE) log_objects(heap, unreachable, "collectable");

    heap.phase = Phase::finalizing;
    bool user_code_ran = handle_weakrefs(heap, unreachable);
    user_code_ran |= finalize_garbage(heap, unreachable);
    if (user_code_ran) keep_resurrected(heap, unreachable, old);
    clear_weakrefs_silently(heap, unreachable);
    outcome.collected = unreachable.size();
    clear_garbage(heap, unreachable, old);
    outcome.uncollectable = keep_uncollectable(heap, uncollectable, old);
    return outcome;
}

}  // namespace

cgc_ssize_t collect(Heap &heap, int generation) {
    if (heap.collecting()) return 0;
    expect_phase(heap, Phase::idle);
    heap.collection_due = false;
    cgc_collection_info info{};
    info.generation = generation;
    heap.phase = Phase::callbacks;
    invoke_callbacks(heap, "start", info);

    bool stats_wanted = (heap.debug_flags & CGC_DEBUG_STATS) != 0;
    if (stats_wanted) log_generation_sizes(heap, generation);
    auto start = std::chrono::steady_clock::now();
    Outcome outcome = run_collection(heap, generation);
    auto elapsed = std::chrono::steady_clock::now() - start;
    auto ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
    if (stats_wanted)
        log_line(heap, "gc: done, %td unreachable, %td uncollectable, %.4fs elapsed",
                 outcome.collected + outcome.uncollectable, outcome.uncollectable, static_cast<double>(ns) / 1e9);

    cgc_generation_stats &stats = heap.generations[generation].stats;
    stats.collections++;
    stats.collected += static_cast<uint64_t>(outcome.collected);
    stats.uncollectable += static_cast<uint64_t>(outcome.uncollectable);
    stats.examined += static_cast<uint64_t>(outcome.candidates);
    stats.total_ns += ns;
    stats.max_pause_ns = std::max(stats.max_pause_ns, ns);

    info.collected = outcome.collected;
    info.uncollectable = outcome.uncollectable;
    info.candidates = outcome.candidates;
    info.duration_ns = ns;
    invoke_callbacks(heap, "stop", info);
    heap.phase = Phase::idle;
    return outcome.collected + outcome.uncollectable;
}

cgc_ssize_t collect_automatic(Heap &heap) {
    heap.collection_due = false;
    if (heap.collecting()) return 0;
    for (int g = CGC_NUM_GENERATIONS - 1; g >= 0; --g) {
        Generation &generation = heap.generations[g];
        if (generation.count <= generation.threshold) continue;
        // Full collections wait until enough new long-lived objects exist.
        if (g == CGC_NUM_GENERATIONS - 1 && heap.long_lived_pending < heap.long_lived_total / 4)
            continue;
        return collect(heap, g);
    }
    return 0;
}

}  // namespace cyclegc::internal
