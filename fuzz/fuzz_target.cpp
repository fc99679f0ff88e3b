// libFuzzer target: the input bytes are the choices of the stress driver
// (tests/stress): which operation, on which objects, with which finalizer
// and callback behaviour, which collections. The model's checks are the
// assertions (a failed check aborts, so libFuzzer saves the input); ASan and
// UBSan catch memory errors, LeakSanitizer leaks. A saved input replays
// without libFuzzer: cyclegc_stress --replay FILE --trace.
#include "driver.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    cgc_stress::set_abort_on_failure(true);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cgc_stress::ByteSource source(data, size);
    cgc_stress::Options options;
    options.max_ops = 4000;
    options.check_every = 8;  // and after every full collection
    options.replay = "cyclegc_stress --replay <the crash file> --trace";
    cgc_stress::run_sequence(source, options);
    return 0;
}
