// binary-trees, the Computer Language Benchmarks Game program in its
// single-threaded form: many short-lived perfect binary trees built
// bottom-up and walked, beside one long-lived tree.
//
//     binary_trees VARIANT [DEPTH]      (DEPTH: 18 by default)
//
// Its usual output comes first; the checksum of the result line is the sum
// of the checks printed. Variants: cyclegc (make/ref), shared_ptr,
// unique_ptr (no sharing at all: the floor), boehm (GC_MALLOC).
#include "trees.hpp"

namespace {

using namespace programs;

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
    return programs::main<binary_trees, cyclegc_trees<>, std_trees<true>, std_trees<false>
#ifdef CYCLEGC_BENCH_HAVE_BOEHM
                          , boehm_trees<>
#endif
                          >(argc, argv);
}
