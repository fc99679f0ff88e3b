// The C API of the graph writers: build the heap's graph, open the file,
// write it in one of the formats.
#include "heap_graph.hpp"
#include "writers.hpp"

#include <cyclegc/diagnostics.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

using namespace cyclegc::internal;
using namespace cyclegc::internal::diag;

namespace {

template <typename Write>
int write_file(const char *path, const char *function, Write write) {
    if (!path) {
        report(CGC_ERR_MISUSE, "%s: the path is NULL", function);
        return -1;
    }
    try {
        HeapGraph graph;
        if (!build_graph(current_heap(), graph, function)) return -1;
        std::FILE *file = std::fopen(path, "wb");
        if (!file) {
            report(CGC_ERR_VALUE, "%s: cannot open %s: %s", function, path, std::strerror(errno));
            return -1;
        }
        int written = write(graph, file);  // 1, 0 (a write failed), -1 (reported)
        if (std::fclose(file) != 0 && written > 0) written = 0;
        if (written < 0) {
            std::remove(path);
            return -1;
        }
        if (!written) {
            report(CGC_ERR_VALUE, "%s: cannot write %s: %s", function, path, std::strerror(errno));
            return -1;
        }
        return 0;
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "%s: out of memory", function);
        return -1;
    }
}

}  // namespace

extern "C" {

int cgc_diag_write_heapsnapshot(const char *path) {
    return write_file(path, "cgc_diag_write_heapsnapshot", [](const HeapGraph &graph, std::FILE *file) {
        return int(write_heapsnapshot(graph, file));
    });
}

int cgc_diag_write_cgcgraph(const char *path) {
    return write_file(path, "cgc_diag_write_cgcgraph", [](const HeapGraph &graph, std::FILE *file) {
        return int(write_cgcgraph(graph, file));
    });
}

int cgc_diag_write_backrefs_dot(cgc_object *object, int max_depth, const char *path) {
    const char *function = "cgc_diag_write_backrefs_dot (objgraph.show_backrefs)";
    if (max_depth < 0) {
        report(CGC_ERR_VALUE, "%s: max_depth must be >= 0, not %d", function, max_depth);
        return -1;
    }
    return write_file(path, function, [&](const HeapGraph &graph, std::FILE *file) {
        uint32_t node = node_of_argument(graph, object, function);
        if (node == kNoNode) return -1;
        return int(write_backrefs_dot(graph, node, max_depth, file));
    });
}
}  // extern "C"
