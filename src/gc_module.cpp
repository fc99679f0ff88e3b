// The gc module's surface beyond collecting: debug output, collection
// callbacks, freezing, introspection, the garbage list, unraisable errors.
#include "heap.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace cyclegc::internal {
namespace {

void log_to_stderr(const char *line, void *) { std::fprintf(stderr, "%s\n", line); }

// A growable array of new references, as returned to the user.
class ListBuilder {
  public:
    explicit ListBuilder(const char *function) : function_(function) {}
    ~ListBuilder() {
        for (cgc_object *op : items_) cgc_decref(op);
    }
    bool add(cgc_object *op) {
        try {
            items_.push_back(op);
        } catch (...) {
            report(CGC_ERR_MEMORY, "%s: out of memory", function_);
            return false;
        }
        cgc_incref(op);
        return true;
    }
    int finish(cgc_object_list *out) {
        auto **items = static_cast<cgc_object **>(std::malloc(sizeof(cgc_object *) * (items_.size() + 1)));
        if (!items) {
            report(CGC_ERR_MEMORY, "%s: out of memory", function_);
            return -1;
        }
        std::copy(items_.begin(), items_.end(), items);
        out->items = items;
        out->count = static_cast<cgc_ssize_t>(items_.size());
        items_.clear();
        return 0;
    }

  private:
    const char *function_;
    std::vector<cgc_object *> items_;
};

// Calls visit(op) for the tracked objects of `generation` (-1: all but the
// permanent generation; kPermanent: frozen ones too) until it returns
// false. Objects of a running collection's unreachable set are not seen.
// `visit` may run a tp_traverse, which may track, untrack or free objects
// against the rules: the young arrays are read by index (one that grows
// may move), so such an object is perhaps seen twice or not at all, but
// no freed memory is read.
template <typename Visit>
void for_each_tracked(Heap &heap, int generation, Visit visit) {
    bool unlisted = false;  // whether the page walk must find unlisted young objects
    for (int g = 0; g < 2; ++g) {
        if (generation >= 0 && generation != g && generation != kPermanent) continue;
        for (size_t i = 0; i < heap.young[g].size(); ++i)
            if (!visit(heap.young[g][i])) return;
        unlisted |= heap.young_unlisted[g] > 0;
    }
    if (generation >= 0 && generation < 2 && !unlisted) return;
    bool going = true;
    for_each_tracked(heap.space, [&](cgc_object *op, GcMeta &meta) {
        if (!going || in_collection_set(meta)) return;
        if (meta.generation < 2) {
            bool wanted = generation < 0 || generation == kPermanent || generation == meta.generation;
            if (wanted && meta.word == kUnlisted) going = visit(op);
            return;
        }
        if (generation >= 0 && generation < 2) return;
        if (meta.generation == kPermanent && generation != kPermanent) return;
        going = visit(op);
    });
}

bool check_out(cgc_object_list *out, const char *function) {
    if (out) {
        out->items = nullptr;
        out->count = 0;
        return true;
    }
    report(CGC_ERR_MISUSE, "%s: the output list is NULL", function);
    return false;
}

// The arguments of the functions that take objects (and an output list).
bool check_in_out(cgc_object *const *objects, cgc_ssize_t count, cgc_object_list *out, const char *function) {
    if (!check_out(out, function)) return false;
    if (count < 0 || (count > 0 && !objects)) {
        report(CGC_ERR_MISUSE, "%s: %td objects at %p", function, count, static_cast<const void *>(objects));
        return false;
    }
    return true;
}

struct ReferrerSearch {
    cgc_object *const *targets;
    cgc_ssize_t count;
    bool found;
};

int visit_find_target(cgc_object *child, void *arg) {
    auto *search = static_cast<ReferrerSearch *>(arg);
    for (cgc_ssize_t i = 0; i < search->count; ++i) {
        if (search->targets[i] == child) {
            search->found = true;
            return 1;  // stop this traversal: one hit is enough
        }
    }
    return 0;
}

int visit_collect_referent(cgc_object *child, void *builder) {
    return static_cast<ListBuilder *>(builder)->add(child) ? 0 : -1;
}

}  // namespace

void log_line(Heap &heap, const char *format, ...) {
    char buffer[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buffer, sizeof buffer, format, args);
    va_end(args);
    t_names_cxx_type = false;  // (the type names of a log line are not a report's)
    (heap.log_sink ? heap.log_sink : log_to_stderr)(buffer, heap.log_context);
}

void report_unraisable_exception(const char *what, cgc_object *op, const char *message) noexcept {
    char buffer[768];
    std::snprintf(buffer, sizeof buffer, "%s: %s", what, message);
    cgc_report_unraisable(buffer, op);
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

// (On a shared heap, settings change under its state lock, and the walks
// over every object run with its world stopped.)
void cgc_set_debug(int flags) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    heap.debug_flags = flags;
}
int cgc_get_debug(void) { return current_heap().debug_flags; }

cgc_log_sink cgc_set_log_sink(cgc_log_sink sink, void *context) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    cgc_log_sink previous = heap.log_sink ? heap.log_sink : log_to_stderr;
    heap.log_sink = sink;
    heap.log_context = context;
    return previous;
}

int cgc_add_collection_callback(cgc_collection_callback callback, void *context) {
    if (!callback) {
        report(CGC_ERR_MISUSE, "cgc_add_collection_callback: the callback is NULL");
        return -1;
    }
    try {
        Heap &heap = current_heap();
        StateLock guard(heap);
        heap.callbacks.emplace_back(callback, context);
    } catch (...) {
        report(CGC_ERR_MEMORY, "cgc_add_collection_callback: out of memory");
        return -1;
    }
    return 0;
}

int cgc_remove_collection_callback(cgc_collection_callback callback, void *context) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    auto &callbacks = heap.callbacks;
    auto found = std::find(callbacks.begin(), callbacks.end(), std::make_pair(callback, context));
    if (found == callbacks.end() || !callback) return -1;
    if (heap.callbacks_walking)
        *found = {nullptr, nullptr};  // (erased when the walk ends: see invoke_callbacks)
    else
        callbacks.erase(found);
    return 0;
}

void cgc_freeze(void) {
    Heap &heap = current_heap();
    StoppedWorld stopped(heap);
    if (heap.collecting()) {
        report(CGC_ERR_MISUSE, "cgc_freeze (gc.freeze): called during a collection; ignored");
        return;
    }
    abandon_cycle(heap);  // (its candidates become frozen)
    for_each_tracked(heap.space, [&](cgc_object *, GcMeta &meta) {
        if (meta.generation != kPermanent) meta.generation = kPermanent;
        // Frozen objects no longer count toward the next full collection.
        heap.long_lived_pending -= meta.schedule & kPromotedPending;
        meta.schedule = 0;
    });
    heap.clear_young();
    for (auto &generation : heap.generations) generation.count = 0;
}

void cgc_unfreeze(void) {
    Heap &heap = current_heap();
    StoppedWorld stopped(heap);
    if (heap.collecting()) {
        report(CGC_ERR_MISUSE, "cgc_unfreeze (gc.unfreeze): called during a collection; ignored");
        return;
    }
    for_each_tracked(heap.space, [](cgc_object *, GcMeta &meta) {
        if (meta.generation == kPermanent) {
            meta.generation = 2;
            meta.word = 0;
        }
    });
}

cgc_ssize_t cgc_get_freeze_count(void) {
    cgc_ssize_t count = 0;
    StoppedWorld stopped(current_heap());
    for_each_tracked(current_heap().space, [&](cgc_object *, GcMeta &meta) {
        if (meta.generation == kPermanent) ++count;
    });
    return count;
}

void cgc_object_list_release(cgc_object_list *list) {
    if (!list) return;
    for (cgc_ssize_t i = 0; i < list->count; ++i) cgc_decref(list->items[i]);
    std::free(list->items);
    list->items = nullptr;
    list->count = 0;
}

int cgc_get_objects(int generation, cgc_object_list *out) {
    const char *function = "cgc_get_objects (gc.get_objects)";
    if (!check_out(out, function)) return -1;
    if (generation < -1 || generation >= CGC_NUM_GENERATIONS) {
        report(CGC_ERR_VALUE, "%s: generation must be in range(0, %d) or -1, not %d", function,
               CGC_NUM_GENERATIONS, generation);
        return -1;
    }
    ListBuilder builder(function);
    bool ok = true;
    StoppedWorld stopped(current_heap());
    for_each_tracked(current_heap(), generation, [&](cgc_object *op) { return ok = builder.add(op); });
    return ok ? builder.finish(out) : -1;
}

int cgc_get_referrers(cgc_object *const *objects, cgc_ssize_t count, cgc_object_list *out) {
    const char *function = "cgc_get_referrers (gc.get_referrers)";
    if (!check_in_out(objects, count, out, function)) return -1;
    Heap &heap = current_heap();
    ListBuilder builder(function);
    bool ok = true;
    StoppedWorld stopped(heap);
    for_each_tracked(heap, -1, [&](cgc_object *op) {
        ReferrerSearch search{objects, count, false};
        if (cgc_traverseproc traverse = op->ob_type->tp_traverse) traverse(op, visit_find_target, &search);
        if (search.found) ok = builder.add(op);
        return ok;
    });
    return ok ? builder.finish(out) : -1;
}

int cgc_get_referents(cgc_object *const *objects, cgc_ssize_t count, cgc_object_list *out) {
    const char *function = "cgc_get_referents (gc.get_referents)";
    if (!check_in_out(objects, count, out, function)) return -1;
    ListBuilder builder(function);
    for (cgc_ssize_t i = 0; i < count; ++i) {
        cgc_object *op = objects[i];
        if (!op || !has_gc_head(op)) continue;  // as CPython: non-GC objects have no referents
        if (cgc_traverseproc traverse = op->ob_type->tp_traverse)
            if (traverse(op, visit_collect_referent, &builder) != 0) return -1;
    }
    return builder.finish(out);
}

void cgc_visit_objects(cgc_object_visitor visitor, void *arg) {
    if (!visitor) return;
    Heap &heap = current_heap();
    // A snapshot (holding references), so that the visitor may free objects.
    ListBuilder builder("cgc_visit_objects (PyUnstable_GC_VisitObjects)");
    bool ok = true;
    {
        StoppedWorld stopped(heap);
        for_each_tracked(heap, kPermanent, [&](cgc_object *op) { return ok = builder.add(op); });
    }
    cgc_object_list list{};
    if (!ok || builder.finish(&list) < 0) return;
    bool was_enabled = cgc_disable();
    for (cgc_ssize_t i = 0; i < list.count; ++i)
        if (visitor(list.items[i], arg) == 0) break;
    if (was_enabled) cgc_enable();
    cgc_object_list_release(&list);
}

int cgc_get_garbage(cgc_object_list *out) {
    const char *function = "cgc_get_garbage (gc.garbage)";
    if (!check_out(out, function)) return -1;
    ListBuilder builder(function);
    Heap &heap = current_heap();
    StateLock guard(heap);
    for (cgc_object *op : heap.garbage)
        if (!builder.add(op)) return -1;
    return builder.finish(out);
}

cgc_ssize_t cgc_garbage_count(void) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    return static_cast<cgc_ssize_t>(heap.garbage.size());
}

void cgc_garbage_clear(void) {
    std::vector<cgc_object *> dropped;
    {
        Heap &heap = current_heap();
        StateLock guard(heap);
        dropped.swap(heap.garbage);
    }
    for (cgc_object *op : dropped) cgc_decref(op);
}

cgc_log_sink cgc_get_log_sink(void **context) {
    Heap &heap = current_heap();
    if (context) *context = heap.log_context;
    return heap.log_sink ? heap.log_sink : log_to_stderr;
}

void cgc_report_unraisable(const char *message, cgc_object *object) {
    Heap &heap = current_heap();
    if (heap.phase == Phase::finding_unreachable) heap.traverse_failed = true;  // (only tp_traverse runs)
    if (!message) message = "";
    if (heap.unraisable_hook) {
        heap.unraisable_hook(message, object, heap.unraisable_hook_context);
        return;
    }
    if (object)
        report(CGC_ERR_UNRAISABLE, "Exception ignored in: <%s object at %p>: %s", type_name_of(object),
               static_cast<void *>(object), message);
    else
        report(CGC_ERR_UNRAISABLE, "Exception ignored: %s", message);
}

cgc_unraisable_hook cgc_set_unraisable_hook(cgc_unraisable_hook hook, void *context) {
    Heap &heap = current_heap();
    cgc_unraisable_hook previous = heap.unraisable_hook;
    heap.unraisable_hook = hook;
    heap.unraisable_hook_context = context;
    return previous;
}

cgc_unraisable_hook cgc_get_unraisable_hook(void **context) {
    Heap &heap = current_heap();
    if (context) *context = heap.unraisable_hook_context;
    return heap.unraisable_hook;
}

}  // extern "C"
