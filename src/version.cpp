// The library's version at run time (cgc_version, cgc_version_number): what
// the program was linked against, which may differ from the CGC_VERSION of
// the header it was compiled with.
#include <cyclegc/cyclegc.h>

extern "C" {

const char *cgc_version(void) { return CGC_VERSION; }

int cgc_version_number(void) { return CGC_VERSION_NUMBER; }

}  // extern "C"
