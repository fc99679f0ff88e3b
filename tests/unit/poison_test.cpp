// Poisoned free slots (src/poison.hpp): under AddressSanitizer a freed GC
// object's slot is poisoned, except its 16-byte header, so a use after free
// is reported by ASan although the slot stays in the library's page; a slot
// handed out again is fully usable. Under valgrind with CYCLEGC_VALGRIND=ON,
// memcheck reports the same reads (the poison.valgrind test runs
// PoisonMemcheck.* under memcheck).
//
// The death tests need ASan (the asan preset); other builds skip them.
#include "poison.hpp"
#include "test_types.hpp"

#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#if CYCLEGC_MEMCHECK
#include <valgrind/valgrind.h>
#endif

namespace poison_test {
namespace {

using namespace cgc_test;
using cyclegc::make;
using cyclegc::ref;

// What ASan says about a read or write of manually poisoned memory.
constexpr const char *kUseAfterPoison = "AddressSanitizer: use-after-poison";

// Reads and writes the compiler cannot drop.
[[gnu::noinline]] uint64_t read_word(const void *p) {
    return *static_cast<const volatile uint64_t *>(p);
}
[[gnu::noinline]] void write_int(int *p, int value) { *static_cast<volatile int *>(p) = value; }

class Poison : public HeapFixture {
  protected:
    void SetUp() override {
        HeapFixture::SetUp();
        ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    }
};

#define SKIP_WITHOUT_ASAN()                                                                       \
    do {                                                                                          \
        if (!CYCLEGC_ASAN) GTEST_SKIP() << "needs AddressSanitizer (the asan preset)";            \
    } while (0)

// A C++ object whose C part does not start its slot (a vtable pointer comes
// first): the header kept readable is at the object offset, not the slot.
struct Poly : cyclegc::object {
    static inline int destroyed = 0;
    int value = 41;
    int more[6] = {1, 2, 3, 4, 5, 6};
    virtual ~Poly() { ++destroyed; }
    virtual int get() const { return value; }
};

struct Plain : cyclegc::object {
    int value = 7;
    int more[5] = {};
};

// (a) A field of a C object freed by Py_DECREF.
TEST_F(Poison, ReadingAFieldOfAFreedObjectIsReported) {
    SKIP_WITHOUT_ASAN();
    Node *node = new_node(&node_type, 1);
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(read_word(&node->next), 0u);  // alive: fine
    cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 1);
    EXPECT_DEATH(read_word(&node->next), kUseAfterPoison);
    EXPECT_DEATH(read_word(&node->extra), kUseAfterPoison);
}

// (a) The same for an object too large for a size class (a page of its own,
// given back to the arena when the object goes) and for a raw slot.
TEST_F(Poison, ReadingAFreedLargeObjectOrRawSlotIsReported) {
    SKIP_WITHOUT_ASAN();
    cgc_type big = make_node_type("test.BigNode", false, true);
    big.tp_basicsize = 20000;
    Node *node = new_node(&big, 2);
    ASSERT_NE(node, nullptr);
    auto *far = reinterpret_cast<char *>(node) + 19992;
    EXPECT_EQ(read_word(far), 0u);
    cgc_decref(obj(node));
    EXPECT_DEATH(read_word(&node->next), "AddressSanitizer: (use-after-poison|heap-use-after-free)");
    EXPECT_DEATH(read_word(far), "AddressSanitizer: (use-after-poison|heap-use-after-free)");

    void *raw = cgc_gc_raw_alloc(64, 16);
    ASSERT_NE(raw, nullptr);
    cgc_gc_raw_free(raw);
    EXPECT_DEATH(read_word(static_cast<char *>(raw) + 32), kUseAfterPoison);
}

// (b) A member of a C++ object written after its last reference went, and
// the vtable pointer before its C part.
TEST_F(Poison, WritingAMemberOfADestroyedCppObjectIsReported) {
    SKIP_WITHOUT_ASAN();
    Poly::destroyed = 0;
    ref<Poly> p = make<Poly>();
    Poly *raw = p.get();
    write_int(&raw->more[5], 9);  // alive: fine
    EXPECT_EQ(raw->get(), 41);
    ASSERT_NE(reinterpret_cast<char *>(raw), reinterpret_cast<char *>(raw->as_cobject()))
        << "expected the vtable pointer before the C part";
    p.reset();
    EXPECT_EQ(Poly::destroyed, 1);
    EXPECT_DEATH(write_int(&raw->value, 1), kUseAfterPoison);
    EXPECT_DEATH(write_int(&raw->more[5], 1), kUseAfterPoison);
    EXPECT_DEATH(read_word(raw), kUseAfterPoison);  // its vtable pointer

    ref<Plain> q = make<Plain>();
    Plain *plain = q.get();
    q.reset();
    EXPECT_DEATH(write_int(&plain->value, 1), kUseAfterPoison);
}

// Never-used slots of a page and the space after a large object are
// poisoned too: a read past the end of the last object is caught.
TEST_F(Poison, SlotsNeverHandedOutArePoisoned) {
    SKIP_WITHOUT_ASAN();
    Node *node = new_node(&node_type, 3);
    ASSERT_NE(node, nullptr);
    size_t slot_size = gci::PageSpace::capacity(node);
    auto *next_slot = reinterpret_cast<char *>(node) + slot_size;
    ASSERT_EQ(gci::page_of(next_slot), gci::page_of(node));
    EXPECT_DEATH(read_word(next_slot), kUseAfterPoison);
    cgc_decref(obj(node));
}

// The header of a freed object stays readable on purpose: a Py_DECREF too
// many finds its count at 0 and is reported (not an ASan error, not a
// second free). Runs in every build.
TEST_F(Poison, HeaderOfAFreedObjectStaysReadable) {
    Node *node = new_node(&node_type, 4);
    ASSERT_NE(node, nullptr);
    cgc_incref(obj(node));
    cgc_decref(obj(node));
    cgc_decref(obj(node));  // freed
    EXPECT_EQ(counters.deallocated, 1);
    EXPECT_EQ(obj(node)->ob_refcnt, 0);
    EXPECT_EQ(obj(node)->ob_type, &node_type);
    cgc_decref(obj(node));  // the one too many
    expect_one_error(CGC_ERR_CORRUPTION, {"test.Node", "below zero"});
    EXPECT_EQ(counters.deallocated, 1) << "freed twice";

    // The same for a C++ object, whose header is not at the start of its slot.
    Poly::destroyed = 0;
    ref<Poly> p = make<Poly>();
    cgc_object *header = p->as_cobject();
    p.reset();
    EXPECT_EQ(Poly::destroyed, 1);
    EXPECT_EQ(header->ob_refcnt, 0);
    cgc_decref(header);
    expect_one_error(CGC_ERR_CORRUPTION, {"Poly", "below zero"});
    EXPECT_EQ(Poly::destroyed, 1) << "destroyed twice";
}

// (c) Controls: live objects are fully usable, and so is an object in a
// slot freed before (poisoned, then handed out again), in a page given back
// and reused for another size class, and in a reused large page.
TEST_F(Poison, LiveAndReusedSlotsAreFullyUsable) {
    Node *first = new_node(&node_type, 5);
    ASSERT_NE(first, nullptr);
    first->id = 6;
    EXPECT_EQ(read_word(&first->extra), 0u);
    cgc_decref(obj(first));
    Node *again = new_node(&node_type, 7);
    ASSERT_EQ(again, first) << "expected the freed slot to be reused";
    EXPECT_EQ(again->next, nullptr);  // zeroed
    EXPECT_EQ(again->extra, nullptr);
    EXPECT_EQ(again->id, 7);
    std::memset(reinterpret_cast<char *>(again) + sizeof(cgc_object), 0x5A,
                gci::PageSpace::capacity(again) - sizeof(cgc_object));
    again->next = again->extra = nullptr;
    cgc_decref(obj(again));

    // C++ objects with and without a vtable pointer, in reused slots.
    Poly *old_poly = make<Poly>().get();  // (the temporary ref frees it)
    ref<Poly> p = make<Poly>();
    EXPECT_EQ(p.get(), old_poly);
    EXPECT_EQ(p->get(), 41);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(p->more[i], i + 1);
    p->value = 3;
    EXPECT_EQ(p->get(), 3);
    Plain *old_plain = make<Plain>().get();
    ref<Plain> q = make<Plain>();
    EXPECT_EQ(q.get(), old_plain);
    EXPECT_EQ(q->value, 7);
    q->more[4] = 1;

    // Pages emptied (given back to the arena, poisoned slots and all), then
    // reused by objects of another size class.
    std::vector<Node *> nodes;
    for (int i = 0; i < 5000; ++i) nodes.push_back(new_node(&node_type, i, false));
    for (Node *n : nodes) cgc_decref(obj(n));
    std::vector<void *> raws;
    for (int i = 0; i < 5000; ++i) {
        auto *r = static_cast<uint64_t *>(cgc_gc_raw_alloc(80, 16));  // (Node: 48-byte slots)
        ASSERT_NE(r, nullptr);  // (not zero-filled: cyclegc.h; written whole, read back)
        for (int w = 0; w < 10; ++w) r[w] = ~uint64_t(w);
        for (int w = 0; w < 10; ++w) ASSERT_EQ(r[w], ~uint64_t(w));
        raws.push_back(r);
    }
    for (void *r : raws) cgc_gc_raw_free(r);

    // A large object in a reused large page.
    cgc_type big = make_node_type("test.BigNode", false, true);
    big.tp_basicsize = 20000;
    for (int round = 0; round < 2; ++round) {
        Node *b = new_node(&big, round);
        ASSERT_NE(b, nullptr);
        auto *bytes = reinterpret_cast<char *>(b);
        for (size_t i = sizeof(Node); i < 20000; ++i) ASSERT_EQ(bytes[i], 0);
        std::memset(bytes + sizeof(Node), 1, 20000 - sizeof(Node));
        cgc_decref(obj(b));
    }
}

#if CYCLEGC_MEMCHECK
// Under valgrind (CYCLEGC_VALGRIND=ON): memcheck counts an error for a read
// of a freed object's field, none for its header or a reused slot.
TEST_F(Poison, MemcheckReportsReadingAFreedObject) {
    if (!RUNNING_ON_VALGRIND) GTEST_SKIP() << "not running under valgrind";
    Node *node = new_node(&node_type, 8);
    ASSERT_NE(node, nullptr);
    unsigned before = VALGRIND_COUNT_ERRORS;
    EXPECT_EQ(read_word(&node->next), 0u);
    cgc_decref(obj(node));
    EXPECT_EQ(VALGRIND_COUNT_ERRORS, before) << "no error while it was alive";
    EXPECT_EQ(obj(node)->ob_refcnt, 0);  // the header: readable
    EXPECT_EQ(VALGRIND_COUNT_ERRORS, before);
    (void)read_word(&node->next);  // freed: memcheck reports an invalid read
    EXPECT_EQ(VALGRIND_COUNT_ERRORS, before + 1);
    Node *again = new_node(&node_type, 9);
    ASSERT_EQ(again, node);
    EXPECT_EQ(read_word(&again->next), 0u);
    again->id = 10;
    EXPECT_EQ(VALGRIND_COUNT_ERRORS, before + 1) << "no error for the reused slot";
    cgc_decref(obj(again));
}
#endif

}  // namespace
}  // namespace poison_test
