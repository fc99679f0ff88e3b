// cyclegc's C++ API: intrusive smart references to collected objects, with
// one `trace` member per type. See docs/cpp.md.
//
//     struct Node : cyclegc::object {
//         cyclegc::ref<Node> next;
//         std::vector<cyclegc::ref<Node>> children;
//         void trace(cyclegc::tracer& t) { t(next, children); }
//     };
//     auto a = cyclegc::make<Node>();  a->next = a;  a = nullptr;
//     cyclegc::collect();              // ~Node runs here
//
// Objects live on the same heap as the C API's, so C and C++ objects can
// refer to each other and are collected together.
#ifndef CYCLEGC_HPP
#define CYCLEGC_HPP

#include <cyclegc/cyclegc.h>

#include "detail/object.hpp"
#include "detail/ref.hpp"
#include "detail/tracer.hpp"
#include "detail/type.hpp"
#include "detail/make.hpp"
#include "detail/weak.hpp"
#include "detail/gc.hpp"
#include "detail/heap.hpp"
#include "detail/function.hpp"

#endif  // CYCLEGC_HPP
