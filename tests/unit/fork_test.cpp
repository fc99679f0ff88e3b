// fork() while other threads allocate and free GC objects. A child inherits
// only the forking thread; a lock another thread held at that moment would
// stay held in the child for ever. The arena's lock (the one lock shared by
// threads) is taken around fork() (pthread_atfork), so every child can
// allocate, collect and free at once. A child that hangs is killed after a
// timeout and fails the test (the suite also gives every test a CTest
// TIMEOUT).
#include <cyclegc/cyclegc.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

struct Pair {
    cgc_object ob_base;
    cgc_object *other;
};

int pair_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    cgc_object *other = reinterpret_cast<Pair *>(self)->other;
    return other ? visit(other, arg) : 0;
}

int pair_clear(cgc_object *self) {
    auto *pair = reinterpret_cast<Pair *>(self);
    cgc_object *other = pair->other;
    pair->other = nullptr;
    cgc_xdecref(other);
    return 0;
}

void pair_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    pair_clear(self);
    cgc_gc_del(self);
}

cgc_type pair_type = [] {
    cgc_type t{};
    t.tp_name = "fork.Pair";
    t.tp_basicsize = sizeof(Pair);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_traverse = pair_traverse;
    t.tp_clear = pair_clear;
    t.tp_dealloc = pair_dealloc;
    return t;
}();

// Makes `cycles` two-object cycles, drops them, and collects: returns how
// many objects the collection freed.
cgc_ssize_t churn_cycles(int cycles) {
    for (int i = 0; i < cycles; ++i) {
        auto *a = reinterpret_cast<Pair *>(cgc_gc_new(&pair_type));
        auto *b = reinterpret_cast<Pair *>(cgc_gc_new(&pair_type));
        if (!a || !b) return -1;
        a->other = &b->ob_base;  // (b's reference, handed over)
        b->other = &a->ob_base;
        cgc_gc_track(&a->ob_base);
        cgc_gc_track(&b->ob_base);
    }
    return cgc_collect(CGC_NUM_GENERATIONS - 1);
}

// What the other threads do meanwhile, each on a heap of its own: pages
// taken from the arena and given back, large regions, and kept pages
// released, all under the arena's lock.
void allocate_and_free_until(const std::atomic<bool> &stop) {
    cgc_heap *heap = cgc_heap_new();
    cgc_heap_set_current(heap);
    cgc_disable();
    while (!stop.load(std::memory_order_relaxed)) {
        churn_cycles(2000);
        cgc_gc_raw_free(cgc_gc_raw_alloc(200000, 16));  // a large region of its own
        cgc_release_free_memory();
    }
    cgc_heap_set_current(nullptr);
    cgc_heap_delete(heap);
}

// The child's work: its own heap, 20,000 objects in cycles, collected.
[[noreturn]] void run_child() {
    cgc_heap *heap = cgc_heap_new();
    cgc_heap_set_current(heap);
    cgc_disable();
    bool ok = churn_cycles(10000) == 20000;
    cgc_release_free_memory();
    ::_exit(ok ? 0 : 1);
}

// Waits for `pid` up to `timeout`; kills it then. The child's status, or -1
// if it had to be killed.
int wait_for(pid_t pid, std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return status;
}

TEST(Fork, ChildrenForkedWhileOtherThreadsAllocateCanAllocateCollectAndFree) {
    ASSERT_EQ(cgc_type_ready(&pair_type), 0);
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) threads.emplace_back(allocate_and_free_until, std::cref(stop));
    int hung = 0, failed = 0;
    for (int child = 0; child < 200 && hung == 0; ++child) {
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) run_child();
        int status = wait_for(pid, std::chrono::seconds(20));
        if (status == -1)
            ++hung;
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            ++failed;
    }
    stop = true;
    for (std::thread &thread : threads) thread.join();
    EXPECT_EQ(hung, 0) << "a child hung (killed after 20 s): a lock held across fork()";
    EXPECT_EQ(failed, 0) << "children that did not free their 20,000 objects";
}

}  // namespace
