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
//
// Each part has its header beside this one (each can be included alone):
// object.hpp (cyclegc::object), ref.hpp, tracer.hpp (tracer, trace_traits,
// access), type.hpp (type_of), make.hpp, weak.hpp, gc.hpp (the gc module's
// functions, callbacks and hooks), heap.hpp (cyclegc::heap), function.hpp
// (cyclegc::function, capture). detail/ holds what users never name.
#ifndef CYCLEGC_HPP
#define CYCLEGC_HPP

#if __cplusplus < 202002L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 202002L)
#error "cyclegc's C++ API needs C++20: link cyclegc::cxx (CMake), or compile with -std=c++20"
#else  // (not the rest: one clear error, not a hundred)

#include <cyclegc/cyclegc.h>

#include "object.hpp"
#include "ref.hpp"
#include "tracer.hpp"
#include "type.hpp"
#include "make.hpp"
#include "weak.hpp"
#include "gc.hpp"
#include "heap.hpp"
#include "function.hpp"

#endif
#endif  // CYCLEGC_HPP
