// Boehm's GCBench (after John Ellis and Pete Kovac's Java program): a
// long-lived tree and a long-lived array of doubles, then, for depths 4, 6,
// .. 16, as many temporary trees as make twice the stretch tree's nodes,
// built top-down (a node, then its children assigned) and bottom-up.
//
//     gcbench VARIANT [MAX_DEPTH]   (16 by default: the long-lived tree's
//                                    depth and the largest temporary one;
//                                    the stretch tree is 2 deeper)
//
// Checksum: the nodes of the last temporary tree of each kind and depth,
// of the long-lived tree at the end, and whether the array kept its value.
// Variants: cyclegc (make/ref), shared_ptr, unique_ptr (the floor), boehm.
#include "trees.hpp"

#include <vector>

namespace {

using namespace programs;

// GCBench's node carries two unused ints beside its children.
struct gcbench_payload {
    int i = 0, j = 0;
};

long tree_size(int depth) { return (1L << (depth + 1)) - 1; }

// Top-down: the node exists (and is reachable) before its children.
template <class Node, class P>
void populate(int depth, Node &node) {
    if (depth <= 0) return;
    node.left = P::make();
    node.right = P::make();
    populate<Node, P>(depth - 1, *node.left);
    populate<Node, P>(depth - 1, *node.right);
}

template <class P>
typename P::tree top_down(int depth) {
    auto tree = P::make();
    populate<typename P::node, P>(depth, *tree);
    return tree;
}

struct gcbench {
    static constexpr const char *name = "gcbench";

    // Builds and drops `iterations` trees made by `build`; returns the node
    // count of the last one.
    template <class P, class Build>
    static long construct(long iterations, int depth, Build build) {
        long nodes = 0;
        for (long i = 0; i < iterations; ++i) {
            auto tree = build(depth);
            if (i == iterations - 1) nodes = check(*tree);
        }
        return nodes;
    }

    template <class P>
    static void run(int argc, char **argv, program_result &r) {
        const int min_depth = 4;
        const int max_depth = std::max(min_depth, int(program_arg(argc, argv, 2, 16)));
        const int stretch_depth = max_depth + 2;
        const long array_size = 500000;

        r.checksum += check(*bottom_up<P>(stretch_depth));
        auto long_lived = top_down<P>(max_depth);
        std::vector<double> array(array_size);
        for (long i = 0; i < array_size / 2; ++i) array[i] = 1.0 / double(i);
        for (int depth = min_depth; depth <= max_depth; depth += 2) {
            long iterations = 2 * tree_size(stretch_depth) / tree_size(depth);
            r.checksum += construct<P>(iterations, depth, top_down<P>);
            r.checksum += construct<P>(iterations, depth, bottom_up<P>);
        }
        r.checksum += check(*long_lived) + (array[1000] == 1.0 / 1000 ? 1 : 0);
    }
};

}  // namespace

int main(int argc, char **argv) {
    return programs::main<gcbench, cyclegc_trees<gcbench_payload>, std_trees<true, gcbench_payload>,
                          std_trees<false, gcbench_payload>
#ifdef CYCLEGC_BENCH_HAVE_BOEHM
                          , boehm_trees<gcbench_payload>
#endif
                          >(argc, argv);
}
