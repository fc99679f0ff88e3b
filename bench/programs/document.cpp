// A document model: a tree of elements with DOM-like links (first and
// last child, parent, previous and next sibling) and listeners, objects
// that refer back to the element they listen to. Built to ELEMENTS elements
// (each new one under a random element, half of them with a listener),
// then EDITS random edits: moves (30%), removals of small subtrees (20%),
// insertions (30%) and listener changes (20%). Then the whole document is
// dropped, and reclaimed before the clock stops.
//
//     document VARIANT [ELEMENTS] [EDITS]     (1000000 each by default)
//
// Every back edge (parent, previous sibling, last child, a listener's
// element) is what each variant's user writes: a strong ref with cyclegc
// (the document is all cycles), a weak_ptr with std::shared_ptr, a raw
// pointer into an arena freed at the end, or a raw pointer into Boehm's
// heap. Checksum: a hash of the final document walked in order.
#include "programs.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
#include <gc/gc_allocator.h>
#endif

namespace {

using namespace programs;

template <class P>
struct listener;

// The `trace` members are the cyclegc variant's (other variants never call
// them).
template <class P>
struct element : P::template base<element<P>> {
    typename P::template strong<element> first_child{}, next_sibling{};
    typename P::template back<element> last_child{}, parent{}, prev_sibling{};
    typename P::template vector<typename P::template strong<listener<P>>> listeners;
    uint32_t id;
    uint32_t slot = 0;  // in the document's registry of attached elements
    explicit element(uint32_t i) : id(i) {}
    void trace(cyclegc::tracer &t) { t(first_child, next_sibling, last_child, parent, prev_sibling, listeners); }
};

template <class P>
struct listener : P::template base<listener<P>> {
    typename P::template back<element<P>> target;
    uint64_t id;
    listener(typename P::template back<element<P>> e, uint64_t i) : target(std::move(e)), id(i) {}
    void trace(cyclegc::tracer &t) { t(target); }
};

struct cyclegc_document {
    static constexpr const char *variant = "cyclegc";
    using collector = cyclegc_collector;
    template <class>
    using base = cyclegc::object;
    template <class T>
    using strong = cyclegc::ref<T>;
    template <class T>
    using back = cyclegc::ref<T>;
    template <class T>
    using vector = std::vector<T>;
    template <class T, class... Args>
    static strong<T> make(Args &&...args) {
        return cyclegc::make<T>(std::forward<Args>(args)...);
    }
    template <class T>
    static strong<T> self(T *e) {
        return strong<T>::borrow(e);
    }
    template <class T>
    static back<T> back_of(T *e) {
        return strong<T>::borrow(e);
    }
    template <class T>
    static T *get(const back<T> &b) {
        return b.get();
    }
    // The dropped document is cycles: a collection reclaims it.
    static void reclaim() { collector::collect(); }
};

struct shared_ptr_document {
    static constexpr const char *variant = "shared_ptr";
    using collector = no_collector;
    template <class T>
    using base = std::enable_shared_from_this<T>;
    template <class T>
    using strong = std::shared_ptr<T>;
    template <class T>
    using back = std::weak_ptr<T>;
    template <class T>
    using vector = std::vector<T>;
    template <class T, class... Args>
    static strong<T> make(Args &&...args) {
        return std::make_shared<T>(std::forward<Args>(args)...);
    }
    template <class T>
    static strong<T> self(T *e) {
        return e->shared_from_this();
    }
    template <class T>
    static back<T> back_of(T *e) {
        return e->weak_from_this();
    }
    template <class T>
    static T *get(const back<T> &b) {
        return b.lock().get();
    }
    static void reclaim() {}
};

// Raw pointers for the variants that free nothing one by one.
struct raw_pointers {
    struct no_base {};
    template <class>
    using base = no_base;
    template <class T>
    using strong = T *;
    template <class T>
    using back = T *;
    template <class T>
    static T *self(T *e) {
        return e;
    }
    template <class T>
    static T *back_of(T *e) {
        return e;
    }
    template <class T>
    static T *get(T *b) {
        return b;
    }
};

// Elements and listeners in arenas (deques: stable addresses), all freed at
// the end.
struct arena_document : raw_pointers {
    static constexpr const char *variant = "arena";
    using collector = no_collector;
    template <class T>
    using vector = std::vector<T>;
    static std::vector<std::function<void()>> &arenas() {
        static std::vector<std::function<void()>> frees;
        return frees;
    }
    template <class T>
    static std::deque<T> &arena() {
        static std::deque<T> objects;
        static bool enrolled = (arenas().push_back([] { std::deque<T>().swap(objects); }), true);
        (void)enrolled;
        return objects;
    }
    template <class T, class... Args>
    static T *make(Args &&...args) {
        return &arena<T>().emplace_back(std::forward<Args>(args)...);
    }
    static void reclaim() {
        for (auto &free_arena : arenas()) free_arena();
    }
};

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
// Boehm scans collected memory only: the listener vectors use its
// allocator, as its users do.
struct boehm_document : raw_pointers {
    static constexpr const char *variant = "boehm";
    using collector = boehm_collector;
    template <class T>
    using vector = std::vector<T, gc_allocator<T>>;
    template <class T, class... Args>
    static T *make(Args &&...args) {
        return collector::make<T>(std::forward<Args>(args)...);
    }
    static void reclaim() { collector::collect(); }
};
#endif

template <class X>
auto *raw(const X &x) {
    if constexpr (std::is_pointer_v<X>)
        return x;
    else
        return x.get();
}

template <class X>
void clear(X &x) {
    x = X{};
}

template <class P>
class document {
  public:
    using node = element<P>;
    using strong = typename P::template strong<node>;

    explicit document(uint64_t seed) : random_(seed), root_(P::template make<node>(next_id_++)) {
        enroll(raw(root_));
    }

    // A new element (half with a listener) under a random element.
    void insert() {
        strong e = P::template make<node>(next_id_++);
        if (random_.next() & 1) add_listener(raw(e));
        node *parent = pick();
        node *child = raw(e);
        append(parent, std::move(e));
        enroll(child);
    }

    // A random element (not the root) goes under another, outside it and at
    // most 32 deep (as in a real document, whose depth stays small).
    void move() {
        node *e = pick_below_root();
        node *target = pick();
        while (!fits(e, target)) target = pick();
        append(target, detach(e));
    }

    // A random subtree of at most 64 elements leaves the document.
    void remove() {
        node *e = pick_below_root();
        while (!small(e)) e = pick_below_root();
        [[maybe_unused]] strong dropped = detach(e);  // the last reference
        walk(e, [this](node *n) { withdraw(n); });
    }

    void change_listener() {
        node *e = pick();
        if (!e->listeners.empty() && (random_.next() & 1))
            e->listeners.pop_back();
        else
            add_listener(e);
    }

    void edit() {
        uint64_t kind = random_.below(10);
        if (kind < 3)
            move();
        else if (kind < 5)
            remove();
        else if (kind < 8)
            insert();
        else
            change_listener();
    }

    // A hash of the elements and listeners in document order; a listener
    // that does not point back at its element spoils it.
    uint64_t checksum() {
        uint64_t h = registry_.size();
        walk(raw(root_), [&h](node *n) {
            h = h * 1000003 + n->id;
            for (auto &l : n->listeners) h = h * 1000003 + l->id + (P::get(l->target) == n ? 0 : 1ULL << 63);
        });
        return h;
    }

    void drop() {
        clear(root_);
        registry_ = {};
    }

  private:
    void add_listener(node *e) { e->listeners.push_back(P::template make<listener<P>>(P::back_of(e), next_id_++)); }

    static void append(node *parent, strong child) {
        node *c = raw(child);
        c->parent = P::back_of(parent);
        if (node *last = P::get(parent->last_child)) {
            c->prev_sibling = parent->last_child;
            parent->last_child = P::back_of(c);
            last->next_sibling = std::move(child);
        } else {
            parent->last_child = P::back_of(c);
            parent->first_child = std::move(child);
        }
    }

    // Unlinks e from its parent and siblings; returns its owning reference.
    static strong detach(node *e) {
        strong self = P::self(e);
        node *parent = P::get(e->parent);
        node *prev = P::get(e->prev_sibling);
        strong next = std::move(e->next_sibling);
        if (next)
            next->prev_sibling = e->prev_sibling;
        else
            parent->last_child = e->prev_sibling;
        if (prev)
            prev->next_sibling = std::move(next);
        else
            parent->first_child = std::move(next);
        clear(e->next_sibling);
        clear(e->prev_sibling);
        clear(e->parent);
        return self;
    }

    // Every element of the subtree at e, in document order, iteratively,
    // until `visit` returns false (if it returns a bool).
    template <class Visit>
    void walk(node *e, Visit visit) {
        stack_.assign(1, e);
        while (!stack_.empty()) {
            node *n = stack_.back();
            stack_.pop_back();
            if constexpr (std::is_same_v<decltype(visit(n)), bool>) {
                if (!visit(n)) return;
            } else {
                visit(n);
            }
            // Children pushed last first, so they pop in order.
            size_t mark = stack_.size();
            for (node *c = raw(n->first_child); c; c = raw(c->next_sibling)) stack_.push_back(c);
            std::reverse(stack_.begin() + long(mark), stack_.end());
        }
    }

    bool small(node *e) {
        size_t count = 0;
        walk(e, [&count](node *) { return ++count <= 64; });
        return count <= 64;
    }

    // Whether `target` is at most 32 deep and not e or below it.
    static bool fits(node *e, node *target) {
        int depth = 0;
        for (node *n = target; n; n = P::get(n->parent))
            if (n == e || ++depth > 32) return false;
        return true;
    }

    void enroll(node *e) {
        e->slot = uint32_t(registry_.size());
        registry_.push_back(e);
    }
    void withdraw(node *e) {
        node *last = registry_.back();
        registry_[e->slot] = last;
        last->slot = e->slot;
        registry_.pop_back();
    }
    node *pick() { return registry_[random_.below(uint32_t(registry_.size()))]; }
    node *pick_below_root() {
        node *e = pick();
        while (e == raw(root_)) e = pick();
        return e;
    }

    cgcbench::Rng random_;
    uint32_t next_id_ = 0;
    strong root_;
    std::vector<node *> registry_;  // the attached elements, for random picks
    std::vector<node *> stack_;     // walk()'s
};

struct document_program {
    static constexpr const char *name = "document";

    template <class P>
    static void run(int argc, char **argv, program_result &r) {
        const long elements = program_arg(argc, argv, 2, 1000000);
        const long edits = program_arg(argc, argv, 3, 1000000);
        {
            document<P> doc(20261126);
            for (long i = 1; i < elements; ++i) doc.insert();
            for (long i = 0; i < edits; ++i) doc.edit();
            r.checksum = doc.checksum();
            doc.drop();
        }
        P::reclaim();
    }
};

}  // namespace

int main(int argc, char **argv) {
    return programs::main<document_program, cyclegc_document, shared_ptr_document, arena_document
#ifdef CYCLEGC_BENCH_HAVE_BOEHM
                          , boehm_document
#endif
                          >(argc, argv);
}
