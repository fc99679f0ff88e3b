// cgc_heap_transfer and cyclegc::transfer: a producer hands cyclic
// structures of C and C++ objects to a consumer thread, between confined
// heaps and, for comparison, through a shared heap; every object is freed
// exactly once (a second free is caught by a state field); refusals leave
// the graph where it was. Run under the tsan preset too.
#include <cyclegc/Python.h>
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace transfer_test {
namespace {

using cyclegc::make;
using cyclegc::ref;

constexpr int kAlive = 0x7a45;
constexpr int kDead = 0xdead;

std::atomic<long> g_made{0};
std::atomic<long> g_freed{0};
std::atomic<long> g_freed_twice{0};

void count_free(int &state) {
    if (state != kAlive) g_freed_twice.fetch_add(1, std::memory_order_relaxed);
    state = kDead;
    g_freed.fetch_add(1, std::memory_order_relaxed);
}

// A C object: a reference to the next cell and one to any object.
struct Cell {
    PyObject_HEAD
    PyObject *next;
    PyObject *other;
    int state;
};

int cell_traverse(PyObject *self, visitproc visit, void *arg) {
    auto *cell = reinterpret_cast<Cell *>(self);
    Py_VISIT(cell->next);
    Py_VISIT(cell->other);
    return 0;
}
int cell_clear(PyObject *self) {
    auto *cell = reinterpret_cast<Cell *>(self);
    Py_CLEAR(cell->next);
    Py_CLEAR(cell->other);
    return 0;
}
void cell_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    count_free(reinterpret_cast<Cell *>(self)->state);
    cell_clear(self);
    PyObject_GC_Del(self);
}
PyTypeObject cell_type = [] {
    PyTypeObject type{};
    type.tp_name = "transfer_test.Cell";
    type.tp_basicsize = sizeof(Cell);
    type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    type.tp_traverse = cell_traverse;
    type.tp_clear = cell_clear;
    type.tp_dealloc = cell_dealloc;
    return type;
}();

Cell *new_cell() {
    Cell *cell = PyObject_GC_New(Cell, &cell_type);
    cell->next = cell->other = nullptr;
    cell->state = kAlive;
    PyObject_GC_Track(reinterpret_cast<PyObject *>(cell));
    g_made.fetch_add(1, std::memory_order_relaxed);
    return cell;
}

// A C++ object: the next node, and a C cell that refers back to it.
struct Node : cyclegc::object {
    ref<Node> next;
    ref<cgc_object> cell;
    int value;
    int state = kAlive;
    explicit Node(int v) : value(v) { g_made.fetch_add(1, std::memory_order_relaxed); }
    ~Node() { count_free(state); }
    void trace(cyclegc::tracer &t) { t(next, cell); }
};

// A ring of `length` nodes, each holding a cell whose `other` refers back
// to its node (C <-> C++ cycles inside a C++ cycle), values from `first`.
ref<Node> make_ring(int length, int first) {
    ref<Node> head = make<Node>(first);
    Node *last = head.get();
    for (int i = 0; i < length; ++i) {
        Node *node = i == 0 ? head.get() : (last->next = make<Node>(first + i)).get();
        Cell *cell = new_cell();
        cell->other = Py_NewRef(node->as_cobject());
        node->cell = ref<cgc_object>::adopt(reinterpret_cast<cgc_object *>(cell));
        last = node;
    }
    last->next = head;
    return head;
}

// The ring's length, checking each node's value and cell on the way.
int walk_ring(const ref<Node> &head, int first) {
    int length = 0;
    const Node *node = head.get();
    do {
        EXPECT_EQ(node->state, kAlive);
        EXPECT_EQ(node->value, first + length);
        auto *cell = reinterpret_cast<Cell *>(node->cell.get());
        EXPECT_EQ(cell->state, kAlive);
        EXPECT_EQ(cell->other, reinterpret_cast<const PyObject *>(node->as_cobject()));
        ++length;
        node = node->next.get();
    } while (node != head.get() && length < 100000);
    return length;
}

// A queue with a mutex: the synchronising hand-off the contract asks for.
template <class T>
class Queue {
  public:
    void push(T item) {
        std::lock_guard guard(lock_);
        items_.push_back(std::move(item));
        changed_.notify_one();
    }
    T pop() {
        std::unique_lock guard(lock_);
        changed_.wait(guard, [&] { return !items_.empty(); });
        T item = std::move(items_.front());
        items_.pop_front();
        return item;
    }

  private:
    std::mutex lock_;
    std::condition_variable changed_;
    std::deque<T> items_;
};

struct Item {
    ref<Node> root;  // null: the end
    int first = 0;
};

constexpr int kItems = 40;
constexpr int kRingLength = 150;  // 300 objects per item

// Drops garbage cycles on the calling thread's current heap.
void drop_garbage(int rings) {
    for (int i = 0; i < rings; ++i) make_ring(3, 0);
}

// The consumer's side: checks each ring, links it into a cycle of its own
// objects, drops it; collections run meanwhile.
void consume(Queue<Item> &queue) {
    for (int received = 0;; ++received) {
        Item item = queue.pop();
        if (!item.root) return;
        EXPECT_EQ(walk_ring(item.root, item.first), kRingLength);
        ref<Node> mine = make<Node>(-1);
        mine->next = item.root;
        item.root->next->next->cell = cyclegc::as_cobject(mine);  // (a cycle through both)
        drop_garbage(2);
        if (received % 8 == 3) cyclegc::collect();
    }
}

class TransferTest : public ::testing::Test {
  protected:
    void SetUp() override {
        g_made = g_freed = g_freed_twice = 0;
        errors_before_ = cgc_error_count(CGC_ERR_MISUSE) + cgc_error_count(CGC_ERR_CORRUPTION);
    }
    void TearDown() override {
        EXPECT_EQ(cgc_error_count(CGC_ERR_MISUSE) + cgc_error_count(CGC_ERR_CORRUPTION), errors_before_);
    }
    static void expect_all_freed_once() {
        EXPECT_EQ(g_freed_twice.load(), 0);
        EXPECT_EQ(g_freed.load(), g_made.load());
    }
    uint64_t errors_before_ = 0;
};

// (a) Between confined heaps: the producer builds each ring while a heap of
// its own (staging) is current, transfers it and hands it over.
TEST_F(TransferTest, ProducerHandsCyclesToAConsumerBetweenConfinedHeaps) {
    cyclegc::heap consumer_heap;
    Queue<Item> queue;
    std::thread consumer([&] {
        auto scope = consumer_heap.use();
        consume(queue);
        cyclegc::collect();
    });
    std::thread producer([&] {
        cyclegc::heap staging;
        for (int i = 0; i < kItems; ++i) {
            Item item{nullptr, i * 1000};
            {
                auto scope = staging.use();
                item.root = make_ring(kRingLength, item.first);
            }
            cyclegc::transfer(item.root, consumer_heap);
            drop_garbage(2);  // (on the producer's own heap)
            if (i % 8 == 5) cyclegc::collect();
            queue.push(std::move(item));
        }
        queue.push(Item{});
        cyclegc::collect();
    });
    producer.join();
    consumer.join();
    expect_all_freed_once();
}

// (b) The same through a shared heap: no transfer, every object the shared
// heap's, collections from both threads.
TEST_F(TransferTest, ProducerHandsCyclesToAConsumerThroughASharedHeap) {
    auto shared = cyclegc::heap::shared();
    Queue<Item> queue;
    std::thread consumer([&] {
        auto scope = shared.use();
        for (int received = 0;; ++received) {
            Item item;
            {
                cyclegc::detached_scope waiting;  // (a collection need not wait for this thread)
                item = queue.pop();
            }
            if (!item.root) break;
            EXPECT_EQ(walk_ring(item.root, item.first), kRingLength);
            drop_garbage(2);
            if (received % 8 == 3) cyclegc::collect();
        }
    });
    std::thread producer([&] {
        auto scope = shared.use();
        for (int i = 0; i < kItems; ++i) {
            queue.push(Item{make_ring(kRingLength, i * 1000), i * 1000});
            drop_garbage(2);
            if (i % 8 == 5) cyclegc::collect();
        }
        queue.push(Item{});
    });
    producer.join();
    consumer.join();
    {
        auto scope = shared.use();
        cyclegc::collect();
    }
    expect_all_freed_once();
}

// The receiving heap tracks the objects again and collects their cycles;
// the sending heap no longer sees them.
TEST_F(TransferTest, TheReceivingHeapCollectsTheGraph) {
    cyclegc::heap staging, receiver;
    ref<Node> root;
    {
        auto scope = staging.use();
        root = make_ring(4, 0);
        ref<cgc_object> second = cyclegc::as_cobject(root);
        EXPECT_EQ(cgc_heap_transfer(second.get(), receiver.get()), -1);  // (a second reference)
        cgc_error_clear();  // (recorded on the staging heap, current here)
        second = nullptr;
        cyclegc::transfer(root, receiver);
        EXPECT_EQ(cyclegc::collect(), 0);  // (the ring is not the staging heap's)
    }
    auto scope = receiver.use();
    EXPECT_EQ(cyclegc::collect(), 0);  // (still referred to)
    EXPECT_TRUE(cyclegc::is_tracked(root));
    EXPECT_EQ(walk_ring(root, 0), 4);
    root = nullptr;
    EXPECT_EQ(cyclegc::collect(), 8);
    expect_all_freed_once();
}

// The sending heap deleted while the receiving thread still uses the graph:
// its pages moved, so nothing is kept for it.
TEST_F(TransferTest, SourceHeapDeletedWhileTheConsumerHoldsTheGraph) {
    cyclegc::heap receiver;
    Queue<Item> queue;
    std::thread producer([&] {
        cgc_heap *staging = cgc_heap_new();
        ref<Node> root;
        {
            cyclegc::heap::scope scope(staging);
            root = make_ring(50, 7);
        }
        cyclegc::transfer(root, receiver);
        cgc_heap_delete(staging);
        EXPECT_EQ(cgc_error_occurred(), 0) << cgc_error_message();
        queue.push(Item{std::move(root), 7});
    });
    producer.join();
    std::thread consumer([&] {
        auto scope = receiver.use();
        Item item = queue.pop();
        drop_garbage(10);
        cyclegc::collect();
        EXPECT_EQ(walk_ring(item.root, 7), 50);
        item.root = nullptr;
        cyclegc::collect();
    });
    consumer.join();
    expect_all_freed_once();
}

// ---- Refusals: an error naming the function and the type, nothing moved.

std::string refused(const ref<Node> &root, cgc_heap *to) {
    EXPECT_EQ(cgc_heap_transfer(root ? cyclegc::detail::header(root.get()) : nullptr, to), -1);
    std::string message = cgc_error_message() ? cgc_error_message() : "";
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_MISUSE);
    cgc_error_clear();
    return message;
}

std::string refused_cxx(const ref<Node> &root, cgc_heap *to) {
    try {
        cyclegc::transfer(root, to);
    } catch (const std::logic_error &error) {
        cgc_error_clear();
        return error.what();
    }
    ADD_FAILURE() << "not refused";
    return "";
}

class TransferRefusalTest : public TransferTest {
  protected:
    void SetUp() override {
        scope_.emplace(staging_.get());
        TransferTest::SetUp();
    }
    void TearDown() override {
        errors_before_ += refusals_;
        TransferTest::TearDown();
        scope_.reset();
    }
    // Expects the root's ring to be intact and still the staging heap's:
    // a transfer then succeeds.
    void expect_still_here(ref<Node> &root, int length) {
        EXPECT_EQ(walk_ring(root, 0), length);
        EXPECT_EQ(cgc_gc_is_tracked(cyclegc::as_cobject(root).get()), 1);
        cyclegc::transfer(root, receiver_);
        root = nullptr;
        cyclegc::heap::scope there(receiver_.get());
        cyclegc::collect();
    }
    cyclegc::heap receiver_;
    cyclegc::heap staging_;
    std::optional<cyclegc::heap::scope> scope_;
    int refusals_ = 0;
};

TEST_F(TransferRefusalTest, AReferenceFromOutsideTheGraph) {
    ref<Node> root = make_ring(5, 0);
    ref<Node> outside = make<Node>(99);
    outside->next = root->next->next;  // (a tracked object of the heap refers into the graph)
    std::string message = refused_cxx(root, receiver_.get());
    ++refusals_;
    EXPECT_NE(message.find("cgc_heap_transfer"), std::string::npos) << message;
    EXPECT_NE(message.find("outside the graph"), std::string::npos) << message;
    EXPECT_NE(message.find("Node"), std::string::npos) << message;
    EXPECT_NE(message.find("one from object"), std::string::npos) << message;  // (the referrer named)
    ref<Node> held = root->next;  // (a reference from a variable)
    outside = nullptr;
    message = refused_cxx(root, receiver_.get());
    ++refusals_;
    EXPECT_NE(message.find("not from a tracked object"), std::string::npos) << message;
    held = nullptr;
    expect_still_here(root, 5);
    expect_all_freed_once();
}

TEST_F(TransferRefusalTest, AWeakReferenceIntoTheGraph) {
    ref<Node> root = make_ring(3, 0);
    cyclegc::weak<Node> watcher(root->next);
    std::string message = refused_cxx(root, receiver_.get());
    ++refusals_;
    EXPECT_NE(message.find("weak references"), std::string::npos) << message;
    EXPECT_NE(message.find("Node"), std::string::npos) << message;
    watcher.reset();
    expect_still_here(root, 3);
    expect_all_freed_once();
}

TEST_F(TransferRefusalTest, TheSameHeapASharedHeapOrADeletedOne) {
    ref<Node> root = make_ring(3, 0);
    EXPECT_NE(refused(root, staging_.get()).find("receiving heap already"), std::string::npos);
    auto shared = cyclegc::heap::shared();
    EXPECT_NE(refused(root, shared.get()).find("is shared"), std::string::npos);
    cgc_heap *gone = cgc_heap_new();
    cgc_heap_delete(gone);
    EXPECT_NE(refused(root, gone).find("not a heap"), std::string::npos);
    EXPECT_NE(refused(nullptr, receiver_.get()).find("root is NULL"), std::string::npos);
    refusals_ += 4;
    expect_still_here(root, 3);
    expect_all_freed_once();
}

TEST_F(TransferRefusalTest, AnObjectOutsideTheGraphOnItsPage) {
    ref<Node> root = make_ring(3, 0);
    ref<Node> neighbour = make<Node>(5);  // (same size class, same page)
    std::string message = refused(root, receiver_.get());
    ++refusals_;
    EXPECT_NE(message.find("shares a page"), std::string::npos) << message;
    neighbour = nullptr;
    expect_still_here(root, 3);
    expect_all_freed_once();
}

TEST_F(TransferRefusalTest, AnObjectOfAnotherConfinedHeap) {
    ref<Node> elsewhere;
    {
        cyclegc::heap::scope there(receiver_.get());
        elsewhere = make<Node>(1);
    }
    ref<Node> root = make_ring(3, 0);
    root->next->next = elsewhere;  // (the ring is broken into a chain ending elsewhere)
    std::string message = refused(root, receiver_.get());
    ++refusals_;
    EXPECT_NE(message.find("another confined heap"), std::string::npos) << message;
    root = nullptr;
    cyclegc::collect();
    cyclegc::heap::scope there(receiver_.get());
    elsewhere = nullptr;
    expect_all_freed_once();
}

TEST_F(TransferRefusalTest, ACallFromAThreadThatDoesNotOwnTheHeap) {
    ref<Node> root = make_ring(3, 0);
    std::string message;
    std::thread other([&] {
        EXPECT_EQ(cgc_heap_transfer(cyclegc::detail::header(root.get()), receiver_.get()), -1);
        message = cgc_error_message() ? cgc_error_message() : "";
    });
    other.join();
    EXPECT_NE(message.find("cgc_heap_transfer"), std::string::npos) << message;
    EXPECT_NE(message.find("confined to thread"), std::string::npos) << message;
    expect_still_here(root, 3);
    expect_all_freed_once();
}

}  // namespace
}  // namespace transfer_test
