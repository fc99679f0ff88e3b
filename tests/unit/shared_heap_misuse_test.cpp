// A shared heap's objects used by a thread not attached to it, or detached
// from it: releasing, tracking and collecting are refused and reported
// (CGC_ERR_MISUSE naming the function, the type and the thread), and the
// heap is left as it was. Run under the tsan preset too.
#include <cyclegc/Python.h>
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include <unistd.h>

namespace shared_heap_misuse_test {
namespace {

int g_freed = 0;  // (the main thread's collections free them)

struct Box {
    PyObject_HEAD
    PyObject *item;
};

int box_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(reinterpret_cast<Box *>(self)->item);
    return 0;
}
int box_clear(PyObject *self) {
    Py_CLEAR(reinterpret_cast<Box *>(self)->item);
    return 0;
}
void box_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    box_clear(self);
    ++g_freed;
    PyObject_GC_Del(self);
}
PyTypeObject box_type = [] {
    PyTypeObject type{};
    type.tp_name = "misuse_test.Box";
    type.tp_basicsize = sizeof(Box);
    type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    type.tp_traverse = box_traverse;
    type.tp_clear = box_clear;
    type.tp_dealloc = box_dealloc;
    return type;
}();

// A box that holds itself: garbage only a collection frees.
PyObject *new_self_cycle() {
    Box *box = PyObject_GC_New(Box, &box_type);
    box->item = Py_NewRef(reinterpret_cast<PyObject *>(box));
    PyObject_GC_Track(reinterpret_cast<PyObject *>(box));
    return reinterpret_cast<PyObject *>(box);
}

// What `use` reported on a thread of its own (read on the heap current when
// it returns), and that thread's id.
struct Reported {
    int kind = CGC_ERR_NONE;
    std::string message;
    long tid = 0;
};
template <class Use>
Reported on_another_thread(Use use) {
    Reported reported;
    Py_BEGIN_ALLOW_THREADS  // (a collection there need not wait for this thread)
    std::thread([&] {
        use();
        reported.kind = cgc_error_occurred();
        reported.message = cgc_error_message() ? cgc_error_message() : "";
        reported.tid = static_cast<long>(gettid());
        cgc_error_clear();
    }).join();
    Py_END_ALLOW_THREADS
    return reported;
}

void expect_refused(const Reported &reported, const char *function, const char *how) {
    EXPECT_EQ(reported.kind, CGC_ERR_MISUSE);
    EXPECT_NE(reported.message.find(function), std::string::npos) << reported.message;
    EXPECT_NE(reported.message.find("misuse_test.Box"), std::string::npos) << reported.message;
    EXPECT_NE(reported.message.find(how), std::string::npos) << reported.message;
    EXPECT_NE(reported.message.find("thread " + std::to_string(reported.tid)), std::string::npos)
        << reported.message;
}

class SharedHeapMisuseTest : public ::testing::Test {
  protected:
    void SetUp() override {
        g_freed = 0;
        heap_ = cgc_heap_new_shared();
        ASSERT_NE(heap_, nullptr);
        previous_ = cgc_heap_current();
        cgc_heap_set_current(heap_);
    }
    void TearDown() override {
        EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE) << cgc_error_message();
        cgc_heap_set_current(previous_);
        cgc_heap_delete(heap_);
    }
    cgc_heap *heap_ = nullptr;
    cgc_heap *previous_ = nullptr;
};

TEST_F(SharedHeapMisuseTest, AReleaseByAThreadNotAttachedIsRefusedAndTheReferenceKept) {
    PyObject *box = new_self_cycle();
    Py_INCREF(box);  // (count 3: the variable, the box's own, this one)
    Reported reported = on_another_thread([&] { Py_DECREF(box); });  // (its own heap is current)
    expect_refused(reported, "Py_DECREF", "is not attached to");
    EXPECT_EQ(Py_REFCNT(box), 3);
    Py_DECREF(box);
    Py_DECREF(box);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(g_freed, 1);
}

TEST_F(SharedHeapMisuseTest, AReleaseByADetachedThreadIsRefused) {
    PyObject *box = new_self_cycle();
    Py_INCREF(box);
    Reported reported = on_another_thread([&] {
        cgc_heap_set_current(heap_);
        {
            cyclegc::detached_scope detached;
            Py_DECREF(box);  // (not the box's owner: the out-of-line path)
        }  // (still attached when on_another_thread reads the error; the thread's exit detaches it)
    });
    expect_refused(reported, "Py_DECREF", "is detached from");
    EXPECT_EQ(Py_REFCNT(box), 3);
    Py_DECREF(box);
    Py_DECREF(box);
    EXPECT_EQ(cgc_collect(2), 1);
}

TEST_F(SharedHeapMisuseTest, UntrackingAndTrackingByAThreadNotAttachedAreRefused) {
    PyObject *box = new_self_cycle();
    Reported reported = on_another_thread([&] { PyObject_GC_UnTrack(box); });
    expect_refused(reported, "cgc_gc_untrack", "is not attached to");
    EXPECT_TRUE(PyObject_GC_IsTracked(box));
    PyObject_GC_UnTrack(box);  // (this thread is attached)
    reported = on_another_thread([&] { PyObject_GC_Track(box); });
    expect_refused(reported, "cgc_gc_track", "is not attached to");
    EXPECT_FALSE(PyObject_GC_IsTracked(box));
    PyObject_GC_Track(box);
    Py_DECREF(box);
    EXPECT_EQ(cgc_collect(2), 1);
}

TEST_F(SharedHeapMisuseTest, ACollectionByADetachedThreadIsRefused) {
    Py_DECREF(new_self_cycle());
    cgc_ssize_t found = -1;
    Reported reported = on_another_thread([&] {
        cgc_heap_set_current(heap_);
        {
            cyclegc::detached_scope detached;
            found = cgc_collect(2);
        }  // (still attached when on_another_thread reads the error; the thread's exit detaches it)
    });
    EXPECT_EQ(found, 0);
    EXPECT_EQ(reported.kind, CGC_ERR_MISUSE);
    EXPECT_NE(reported.message.find("cgc_collect"), std::string::npos) << reported.message;
    EXPECT_NE(reported.message.find("thread " + std::to_string(reported.tid) + " is detached"), std::string::npos)
        << reported.message;
    EXPECT_EQ(g_freed, 0);
    EXPECT_EQ(cgc_collect(2), 1);
}

}  // namespace
}  // namespace shared_heap_misuse_test
