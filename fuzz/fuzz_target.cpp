// libFuzzer target: the input bytes are the choices of the stress driver
// (tests/stress): which operation, on which objects, with which finalizer
// and callback behaviour, which collections. The model's checks are the
// assertions (a failed check aborts, so libFuzzer saves the input); ASan and
// UBSan catch memory errors, LeakSanitizer leaks. A saved input replays
// without libFuzzer: cyclegc_stress --replay FILE --trace.
#include "driver.hpp"

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {
uint64_t g_inputs = 0, g_operations = 0, g_objects = 0;
void print_totals() {
    std::fprintf(stderr, "cyclegc_fuzz: %" PRIu64 " inputs, %" PRIu64 " operations, %" PRIu64 " objects\n", g_inputs,
                 g_operations, g_objects);
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    cgc_stress::set_abort_on_failure(true);
    std::atexit(print_totals);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cgc_stress::ByteSource source(data, size);
    cgc_stress::Options options;
    options.max_ops = 4000;
    options.check_every = 8;  // and after every full collection
    options.replay = "cyclegc_stress --replay <the crash file> --trace";
    cgc_stress::RunStats stats = cgc_stress::run_sequence(source, options);
    ++g_inputs;
    g_operations += stats.ops;
    g_objects += stats.objects_created;
    return 0;
}
