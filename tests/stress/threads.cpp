// cyclegc_stress_threads: the differential stress test of a shared heap
// with several threads.
//
//   cyclegc_stress_threads [--seed S] [--threads T] [--epochs E] [--ops N]
//                          [--seconds S] [--quiet]
//
// Each epoch starts T threads on one shared heap. Each makes objects, links
// and unlinks them, copies and drops references to objects other threads
// made (taken from a shared mailbox or reached through links), and collects
// (every generation, explicitly and automatically), N operations in all;
// then it exits, handing its references to the next epoch's threads, so
// that objects outlive the threads that made them. A model of the graph
// (the edges and every thread's references) follows each change. After each
// epoch the main thread collects and compares: every object the model
// reaches is alive with exactly the count the model gives it, every other
// object was freed exactly once. Meanwhile every object a thread touches is
// checked alive, and a second free is caught. With --seconds, epochs go on
// until that long has passed.
//
// Links change under the model's lock; reference copies and releases do
// not (they race the other threads' counts, which is the point). A thread
// waiting for that lock is detached, as a program blocking on a lock must
// be (docs/gc.md): the thread holding it may be parked by a collection.
#include <cyclegc/Python.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kSlots = 3;
constexpr uint32_t kAlive = 0xA11CE;
constexpr uint32_t kDead = 0xDEAD;
constexpr uint64_t kNone = UINT64_MAX;
constexpr size_t kMailbox = 64;
constexpr size_t kMaxRoots = 48;

struct Node {
    PyObject_HEAD
    uint64_t id;
    uint32_t state;
    PyObject *slots[kSlots];
};

[[noreturn]] void fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

uint64_t g_seed = 0;
uint64_t g_epoch = 0;

void fail(const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof message, format, args);
    va_end(args);
    std::fprintf(stderr, "\ncyclegc_stress_threads: FAILED (seed %" PRIu64 ", epoch %" PRIu64 "): %s\n", g_seed,
                 g_epoch, message);
    std::fflush(stderr);
    std::abort();
}

// What the collector and the counts did, per object id (fixed capacity:
// ids are never reused).
struct Outcomes {
    std::unique_ptr<std::atomic<uint8_t>[]> freed;
    std::unique_ptr<std::atomic<PyObject *>[]> object;
    size_t capacity = 0;
    std::atomic<uint64_t> next_id{0};

    void reset(size_t n) {
        freed.reset(new std::atomic<uint8_t>[n]);
        object.reset(new std::atomic<PyObject *>[n]);
        for (size_t i = 0; i < n; ++i) {
            freed[i] = 0;
            object[i] = nullptr;
        }
        capacity = n;
        next_id = 0;
    }
};
Outcomes g_outcomes;

Node *as_node(PyObject *op) { return reinterpret_cast<Node *>(op); }

Node *checked(PyObject *op, const char *where) {
    Node *node = as_node(op);
    if (node->state != kAlive)
        fail("%s: object %" PRIu64 " is used after it was freed (state %#x)", where, node->id, node->state);
    return node;
}

int node_traverse(PyObject *self, visitproc visit, void *arg) {
    for (PyObject *slot : as_node(self)->slots) Py_VISIT(slot);
    return 0;
}

int node_clear(PyObject *self) {
    for (PyObject *&slot : as_node(self)->slots) Py_CLEAR(slot);
    return 0;
}

void node_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Node *node = as_node(self);
    if (node->state != kAlive) fail("object %" PRIu64 " is freed twice", node->id);
    node->state = kDead;
    g_outcomes.freed[node->id].fetch_add(1, std::memory_order_relaxed);
    node_clear(self);
    PyObject_GC_Del(self);
}

PyTypeObject node_type = [] {
    PyTypeObject type{};
    type.tp_name = "stress_threads.Node";
    type.tp_basicsize = sizeof(Node);
    type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    type.tp_traverse = node_traverse;
    type.tp_clear = node_clear;
    type.tp_dealloc = node_dealloc;
    return type;
}();

// ---- The model ---------------------------------------------------------------

// The edges (under g_model_lock) and the references held outside objects:
// each thread's own roots (changed by that thread only) and the mailbox
// (under the lock).
struct Model {
    std::vector<std::array<uint64_t, kSlots>> edges;  // by id; kNone: empty
    std::vector<PyObject *> mailbox;
};
Model g_model;
std::mutex g_model_lock;

// Takes the model's lock detached (see the top of the file).
class ModelLock {
  public:
    ModelLock() {
        if (g_model_lock.try_lock()) return;
        Py_BEGIN_ALLOW_THREADS
        g_model_lock.lock();
        Py_END_ALLOW_THREADS
    }
    ~ModelLock() { g_model_lock.unlock(); }
    ModelLock(const ModelLock &) = delete;
    ModelLock &operator=(const ModelLock &) = delete;
};

// ---- A thread's operations --------------------------------------------------

class Worker {
  public:
    Worker(uint64_t seed, std::vector<PyObject *> roots) : rng_(seed), roots_(std::move(roots)) {}

    void run(uint64_t ops) {
        for (uint64_t i = 0; i < ops; ++i) step();
    }
    std::vector<PyObject *> take_roots() { return std::move(roots_); }

  private:
    uint32_t pick(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
    PyObject *any_root() { return roots_[pick(static_cast<uint32_t>(roots_.size()))]; }

    void step() {
        if (roots_.empty()) {
            make();
            return;
        }
        switch (pick(20)) {
            case 0: case 1: case 2: make(); break;
            case 3: case 4: case 5: link(); break;
            case 6: case 7: unlink(); break;
            case 8: case 9: follow(); break;
            case 10: case 11: copy(); break;
            case 12: case 13: case 14: drop(); break;
            case 15: publish(); break;
            case 16: case 17: take(); break;
            case 18: cgc_safepoint(); break;
            default: collect(); break;
        }
        while (roots_.size() > kMaxRoots) drop();
    }

    void make() {
        uint64_t id = g_outcomes.next_id.fetch_add(1);
        if (id >= g_outcomes.capacity) fail("more objects than the run's capacity (%zu)", g_outcomes.capacity);
        Node *node = PyObject_GC_New(Node, &node_type);
        if (!node) fail("PyObject_GC_New failed");
        node->id = id;
        node->state = kAlive;
        for (PyObject *&slot : node->slots) slot = nullptr;
        g_model.edges[id].fill(kNone);  // (no other thread sees it before a publish, under the lock)
        g_outcomes.object[id].store(reinterpret_cast<PyObject *>(node), std::memory_order_relaxed);
        PyObject_GC_Track(reinterpret_cast<PyObject *>(node));
        roots_.push_back(reinterpret_cast<PyObject *>(node));
    }

    // A slot of one of this thread's objects gets another of them, or a
    // mailbox entry, or what a slot of that one holds.
    void link() {
        Node *from = checked(any_root(), "link");
        int slot = static_cast<int>(pick(kSlots));
        ModelLock lock;
        PyObject *to = pick(3) == 0 && !g_model.mailbox.empty()
                           ? g_model.mailbox[pick(static_cast<uint32_t>(g_model.mailbox.size()))]
                           : any_root();
        if (pick(2) == 0) {
            if (PyObject *next = checked(to, "link")->slots[pick(kSlots)]) to = next;
        }
        Node *target = checked(to, "link");
        PyObject *old = from->slots[slot];
        from->slots[slot] = Py_NewRef(to);
        g_model.edges[from->id][slot] = target->id;
        Py_XDECREF(old);
    }

    void unlink() {
        Node *from = checked(any_root(), "unlink");
        int slot = static_cast<int>(pick(kSlots));
        ModelLock lock;
        g_model.edges[from->id][slot] = kNone;
        Py_CLEAR(from->slots[slot]);
    }

    // A root moves along a link (the new reference taken under the lock,
    // the old one dropped without it).
    void follow() {
        size_t index = pick(static_cast<uint32_t>(roots_.size()));
        PyObject *next;
        {
            ModelLock lock;
            next = checked(roots_[index], "follow")->slots[pick(kSlots)];
            if (!next) return;
            Py_INCREF(checked(next, "follow"));
        }
        PyObject *old = roots_[index];
        roots_[index] = next;
        Py_DECREF(old);
    }

    void copy() { roots_.push_back(Py_NewRef(checked(any_root(), "copy"))); }

    void drop() {
        size_t index = pick(static_cast<uint32_t>(roots_.size()));
        PyObject *op = roots_[index];
        roots_[index] = roots_.back();
        roots_.pop_back();
        checked(op, "drop");
        Py_DECREF(op);
    }

    void publish() {
        PyObject *op = Py_NewRef(checked(any_root(), "publish"));
        PyObject *old = nullptr;
        {
            ModelLock lock;
            if (g_model.mailbox.size() < kMailbox) {
                g_model.mailbox.push_back(op);
            } else {
                size_t index = pick(kMailbox);
                old = g_model.mailbox[index];
                g_model.mailbox[index] = op;
            }
        }
        Py_XDECREF(old);
    }

    void take() {
        ModelLock lock;
        if (g_model.mailbox.empty()) return;
        PyObject *op = g_model.mailbox[pick(static_cast<uint32_t>(g_model.mailbox.size()))];
        roots_.push_back(Py_NewRef(checked(op, "take")));
    }

    void collect() {
        if (cgc_collect(static_cast<int>(pick(3))) < 0) fail("a collection failed");
    }

    std::mt19937_64 rng_;
    std::vector<PyObject *> roots_;
};

// ---- The check after each epoch ----------------------------------------------

void check(const std::vector<std::vector<PyObject *>> &roots) {
    if (PyGC_Collect() < 0) fail("the epoch's full collection failed");
    // Anything the library reported (each report is printed) fails the run.
    for (cgc_error_kind kind : {CGC_ERR_MISUSE, CGC_ERR_CORRUPTION, CGC_ERR_MEMORY})
        if (cgc_error_count(kind) != 0) fail("the library reported errors (see above)");
    uint64_t created = g_outcomes.next_id.load();
    std::vector<int64_t> expected(created, 0);  // the model's count of each reachable object
    std::vector<uint8_t> reached(created, 0);
    std::vector<uint64_t> stack;
    auto reach = [&](uint64_t id) {
        ++expected[id];
        if (!reached[id]) {
            reached[id] = 1;
            stack.push_back(id);
        }
    };
    for (const auto &list : roots)
        for (PyObject *op : list) reach(as_node(op)->id);
    for (PyObject *op : g_model.mailbox) reach(as_node(op)->id);
    while (!stack.empty()) {
        uint64_t id = stack.back();
        stack.pop_back();
        for (uint64_t to : g_model.edges[id])
            if (to != kNone) reach(to);
    }
    for (uint64_t id = 0; id < created; ++id) {
        uint8_t freed = g_outcomes.freed[id].load();
        if (freed > 1) fail("object %" PRIu64 " was freed %u times", id, freed);
        if (!reached[id]) {
            if (freed == 0) fail("object %" PRIu64 " is garbage after a full collection but was not freed", id);
            continue;
        }
        if (freed) fail("object %" PRIu64 " is reachable but was freed", id);
        PyObject *op = g_outcomes.object[id].load();
        if (Py_REFCNT(op) != expected[id])
            fail("object %" PRIu64 " has count %zd, the model %" PRId64, id, Py_REFCNT(op), expected[id]);
        // The real slots are the model's edges.
        for (int slot = 0; slot < kSlots; ++slot) {
            PyObject *to = as_node(op)->slots[slot];
            uint64_t model = g_model.edges[id][slot];
            if ((to ? as_node(to)->id : kNone) != model)
                fail("object %" PRIu64 "'s slot %d differs from the model", id, slot);
        }
    }
}

struct Options {
    uint64_t seed = 1;
    int threads = 3;
    uint64_t epochs = 6;
    uint64_t ops = 4000;  // per thread and epoch
    double seconds = 0;
    bool quiet = false;
};

// Runs one seed: `epochs` epochs (or until the deadline), then frees all.
void run_seed(const Options &options, uint64_t seed, std::chrono::steady_clock::time_point deadline) {
    g_seed = seed;
    uint64_t epochs = options.seconds > 0 ? UINT64_MAX : options.epochs;
    size_t per_epoch = static_cast<size_t>(options.ops) * static_cast<size_t>(options.threads);
    size_t capacity = per_epoch * static_cast<size_t>(options.seconds > 0 ? 64 : options.epochs) + 16;
    g_outcomes.reset(capacity);
    g_model.edges.assign(capacity, {});
    g_model.mailbox.clear();
    cgc_heap *heap = cgc_heap_new_shared();
    cgc_heap *previous = cgc_heap_current();
    cgc_heap_set_current(heap);
    std::vector<std::vector<PyObject *>> roots(static_cast<size_t>(options.threads));
    uint64_t epoch = 0;
    for (; epoch < epochs; ++epoch) {
        if (options.seconds > 0 &&
            (std::chrono::steady_clock::now() > deadline || g_outcomes.next_id.load() + per_epoch > capacity))
            break;
        g_epoch = epoch;
        std::vector<std::thread> threads;
        for (int t = 0; t < options.threads; ++t)
            threads.emplace_back([&, t] {
                cgc_heap_set_current(heap);
                Worker worker(seed * 1000003 + epoch * 101 + static_cast<uint64_t>(t), std::move(roots[t]));
                worker.run(options.ops);
                roots[t] = worker.take_roots();
                // (exits attached: its exit detaches it and hands its objects over)
            });
        Py_BEGIN_ALLOW_THREADS
        for (auto &thread : threads) thread.join();
        Py_END_ALLOW_THREADS
        check(roots);
    }
    for (auto &list : roots)
        for (PyObject *op : list) Py_DECREF(op);
    for (auto &list : roots) list.clear();
    for (PyObject *op : g_model.mailbox) Py_DECREF(op);
    g_model.mailbox.clear();
    check(roots);  // (nothing reachable: everything freed once)
    cgc_heap_set_current(previous);
    cgc_heap_delete(heap);
    if (!options.quiet)
        std::printf("seed %" PRIu64 ": %" PRIu64 " epochs, %" PRIu64 " objects, all checks passed\n", seed, epoch,
                    g_outcomes.next_id.load());
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: cyclegc_stress_threads [--seed S] [--seeds N] [--threads T] [--epochs E] "
                         "[--ops N] [--seconds S] [--quiet]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char **argv) {
    Options options;
    uint64_t seeds = 1;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (arg == "--seed") options.seed = std::strtoull(value(), nullptr, 0);
        else if (arg == "--seeds") seeds = std::strtoull(value(), nullptr, 0);
        else if (arg == "--threads") options.threads = std::atoi(value());
        else if (arg == "--epochs") options.epochs = std::strtoull(value(), nullptr, 0);
        else if (arg == "--ops") options.ops = std::strtoull(value(), nullptr, 0);
        else if (arg == "--seconds") options.seconds = std::strtod(value(), nullptr);
        else if (arg == "--quiet") options.quiet = true;
        else usage();
    }
    if (options.threads < 1 || options.ops == 0) usage();
    if (PyType_Ready(&node_type) < 0) fail("PyType_Ready failed");
    auto start = std::chrono::steady_clock::now();
    auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(options.seconds));
    uint64_t seed = options.seed;
    for (uint64_t n = 0; options.seconds > 0 ? std::chrono::steady_clock::now() < deadline : n < seeds; ++n, ++seed)
        run_seed(options, seed, deadline);
    return 0;
}
