// The binary tree nodes of binary-trees and GCBench, one policy per
// variant: how a node is made and held. `Payload` adds plain fields to the
// node (GCBench's two ints); each node has `left` and `right`.
#ifndef CYCLEGC_BENCH_PROGRAMS_TREES_HPP
#define CYCLEGC_BENCH_PROGRAMS_TREES_HPP

#include "programs.hpp"

#include <memory>
#include <type_traits>

namespace programs {

struct no_payload {};

template <class Payload = no_payload>
struct cyclegc_trees {
    static constexpr const char *variant = "cyclegc";
    using collector = cyclegc_collector;
    struct node : cyclegc::object, Payload {
        cyclegc::ref<node> left, right;
        node(cyclegc::ref<node> l, cyclegc::ref<node> r) : left(std::move(l)), right(std::move(r)) {}
        void trace(cyclegc::tracer &t) { t(left, right); }
    };
    using tree = cyclegc::ref<node>;
    static tree make(tree left = nullptr, tree right = nullptr) {
        return cyclegc::make<node>(std::move(left), std::move(right));
    }
};

// The standard smart pointers, as their users write them: make_shared (one
// allocation for the node and its count) or make_unique.
template <bool Shared, class Payload = no_payload>
struct std_trees {
    static constexpr const char *variant = Shared ? "shared_ptr" : "unique_ptr";
    using collector = no_collector;
    struct node;
    using tree = std::conditional_t<Shared, std::shared_ptr<node>, std::unique_ptr<node>>;
    struct node : Payload {
        tree left, right;
        node(tree l, tree r) : left(std::move(l)), right(std::move(r)) {}
    };
    static tree make(tree left = nullptr, tree right = nullptr) {
        if constexpr (Shared)
            return std::make_shared<node>(std::move(left), std::move(right));
        else
            return std::make_unique<node>(std::move(left), std::move(right));
    }
};

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
template <class Payload = no_payload>
struct boehm_trees {
    static constexpr const char *variant = "boehm";
    using collector = boehm_collector;
    struct node : Payload {
        node *left, *right;
        node(node *l, node *r) : left(l), right(r) {}
    };
    using tree = node *;
    static tree make(tree left = nullptr, tree right = nullptr) { return collector::make<node>(left, right); }
};
#endif

// A perfect tree of the given depth, built bottom-up (children first).
template <class P>
typename P::tree bottom_up(int depth) {
    if (depth == 0) return P::make();
    auto left = bottom_up<P>(depth - 1);
    auto right = bottom_up<P>(depth - 1);
    return P::make(std::move(left), std::move(right));
}

// A tree of exactly `nodes` nodes, as balanced as can be.
template <class P>
typename P::tree balanced(long nodes) {
    if (nodes == 0) return nullptr;
    auto left = balanced<P>((nodes - 1) / 2);
    auto right = balanced<P>(nodes - 1 - (nodes - 1) / 2);
    return P::make(std::move(left), std::move(right));
}

// Its node count (binary-trees' "check"; a balanced tree may miss one child).
template <class Node>
long check(const Node &n) {
    return 1 + (n.left ? check(*n.left) : 0) + (n.right ? check(*n.right) : 0);
}

// The same, calling `poll` every 1,024 nodes (some 10 us): a walk that
// allocates nothing reaches a shared heap's safepoint only so (docs/cpp.md,
// "Threads"; every 4,096, a stop waited 50 us for it).
template <class Node, class Poll>
long check(const Node &n, Poll poll, unsigned &steps) {
    if (++steps % 1024 == 0) poll();
    return 1 + (n.left ? check(*n.left, poll, steps) : 0) + (n.right ? check(*n.right, poll, steps) : 0);
}

}  // namespace programs

#endif
