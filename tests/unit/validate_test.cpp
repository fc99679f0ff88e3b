// Whole-heap validation (src/validate.cpp): silent on a heap in order, and
// a clear abort, naming what broke, on each kind of damage it looks for.
// (The debug preset runs it after every collection.)
#include "test_types.hpp"

using namespace cgc_test;

namespace {

class ValidateTest : public HeapFixture {
  protected:
    // Objects in every generation: old, middle, young, and one frozen.
    void populate() {
        for (int i = 0; i < 3; ++i) keep_.push_back(new_node(i));
        cgc_collect(1);  // the three are old now
        keep_.push_back(new_node(10));
        cgc_collect(0);  // middle
        keep_.push_back(new_node(20));  // young
    }
    void TearDown() override {
        for (Node *node : keep_) cgc_decref(obj(node));
        HeapFixture::TearDown();
    }
    // Runs the validation with the default error hook (stderr), for death tests.
    static void validate_loudly() {
        cgc_set_error_hook(nullptr, nullptr);
        gci::validate_heap(heap_state(), "test");
    }
    std::vector<Node *> keep_;
};

TEST_F(ValidateTest, AHeapInOrderPasses) {
    populate();
    make_garbage_pair(1, 2);
    gci::validate_heap(heap_state(), "test");
    cgc_collect(2);
    gci::validate_heap(heap_state(), "test");
    EXPECT_TRUE(take_errors().empty());
}

TEST_F(ValidateTest, AYoungIndexThatDoesNotPointBackAborts) {
    populate();
    EXPECT_DEATH(
        {
            gci::meta_of(keep_.back()).word += 1;
            validate_loudly();
        },
        "heap validation \\(test\\): object .* of type 'test.Node' records index 1 in generation 0's array");
}

TEST_F(ValidateTest, AnObjectWithACollectionsFlagsAborts) {
    populate();
    EXPECT_DEATH(
        {
            gci::meta_of(keep_[0]).flags |= gci::kCollecting;
            validate_loudly();
        },
        "tracked with a collection's flags");
}

TEST_F(ValidateTest, APageThatMiscountsItsObjectsAborts) {
    populate();
    EXPECT_DEATH(
        {
            gci::page_of(keep_[0])->used -= 1;
            validate_loudly();
        },
        "counts [0-9]+ objects but holds");
}

TEST_F(ValidateTest, ABrokenFreeListAborts) {
    populate();
    cgc_decref(obj(keep_.back()));  // a free slot on the page
    keep_.pop_back();
    EXPECT_DEATH(
        {
            gci::Page *page = gci::page_of(keep_[0]);
            ASSERT_NE(page->free_head, 0u);
            page->meta[page->free_head - 1].word = page->free_head;  // a loop
            validate_loudly();
        },
        "free list is broken");
}

TEST_F(ValidateTest, AnUnlistedCountThatDisagreesAborts) {
    populate();
    EXPECT_DEATH(
        {
            heap_state().young_unlisted[1] += 1;
            validate_loudly();
        },
        "generation 1 counts 1 unlisted objects but 0 were found");
}

}  // namespace
