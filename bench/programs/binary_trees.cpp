// binary-trees, the Computer Language Benchmarks Game program in its
// single-threaded form: many short-lived perfect binary trees built
// bottom-up and walked, beside one long-lived tree.
//
//     binary_trees VARIANT [DEPTH]      (DEPTH: 18 by default)
//
// Its usual output comes first; the checksum of the result line is the sum
// of the checks printed. Variants: cyclegc (make/ref), shared_ptr,
// unique_ptr (no sharing at all: the floor), boehm (GC_MALLOC).
#include "programs.hpp"

#include <memory>
#include <type_traits>

namespace {

struct cyclegc_trees {
    static constexpr const char *variant = "cyclegc";
    using collector = programs::cyclegc_collector;
    struct node : cyclegc::object {
        cyclegc::ref<node> left, right;
        node(cyclegc::ref<node> l, cyclegc::ref<node> r) : left(std::move(l)), right(std::move(r)) {}
        void trace(cyclegc::tracer &t) { t(left, right); }
    };
    using tree = cyclegc::ref<node>;
    static tree make(tree left, tree right) { return cyclegc::make<node>(std::move(left), std::move(right)); }
};

// The standard smart pointers, as their users write them: make_shared (one
// allocation for the node and its count) or make_unique.
template <bool Shared>
struct std_trees {
    static constexpr const char *variant = Shared ? "shared_ptr" : "unique_ptr";
    using collector = programs::no_collector;
    struct node;
    using tree = std::conditional_t<Shared, std::shared_ptr<node>, std::unique_ptr<node>>;
    struct node {
        tree left, right;
        node(tree l, tree r) : left(std::move(l)), right(std::move(r)) {}
    };
    static tree make(tree left, tree right) {
        if constexpr (Shared)
            return std::make_shared<node>(std::move(left), std::move(right));
        else
            return std::make_unique<node>(std::move(left), std::move(right));
    }
};
using shared_ptr_trees = std_trees<true>;
using unique_ptr_trees = std_trees<false>;

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
struct boehm_trees {
    static constexpr const char *variant = "boehm";
    using collector = programs::boehm_collector;
    struct node {
        node *left, *right;
    };
    using tree = node *;
    static tree make(tree left, tree right) { return collector::make<node>(left, right); }
};
#endif

template <class P>
typename P::tree bottom_up(int depth) {
    if (depth == 0) return P::make(nullptr, nullptr);
    auto left = bottom_up<P>(depth - 1);
    auto right = bottom_up<P>(depth - 1);
    return P::make(std::move(left), std::move(right));
}

template <class Node>
long check(const Node &n) {
    return 1 + (n.left ? check(*n.left) + check(*n.right) : 0);
}

struct binary_trees {
    static constexpr const char *name = "binary-trees";

    template <class P>
    static void run(int argc, char **argv, program_result &r) {
        const int min_depth = 4;
        const int max_depth = std::max(min_depth + 2, int(program_arg(argc, argv, 2, 18)));
        const int stretch_depth = max_depth + 1;
        long stretch = check(*bottom_up<P>(stretch_depth));
        std::printf("stretch tree of depth %d\t check: %ld\n", stretch_depth, stretch);
        r.checksum += stretch;

        auto long_lived = bottom_up<P>(max_depth);
        for (int depth = min_depth; depth <= max_depth; depth += 2) {
            long iterations = 1L << (max_depth - depth + min_depth), sum = 0;
            for (long i = 0; i < iterations; ++i) sum += check(*bottom_up<P>(depth));
            std::printf("%ld\t trees of depth %d\t check: %ld\n", iterations, depth, sum);
            r.checksum += sum;
        }
        long lived = check(*long_lived);
        std::printf("long lived tree of depth %d\t check: %ld\n", max_depth, lived);
        r.checksum += lived;
    }
};

}  // namespace

int main(int argc, char **argv) {
    return programs::main<binary_trees, cyclegc_trees, shared_ptr_trees, unique_ptr_trees
#ifdef CYCLEGC_BENCH_HAVE_BOEHM
                          , boehm_trees
#endif
                          >(argc, argv);
}
