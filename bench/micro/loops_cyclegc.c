/* loops.h compiled against cyclegc's compat header. */
#include <cyclegc/Python.h>
#include <stdint.h>

#include "loops_api.h"

#define LOOP_PREFIX cgcloop
#include "loops.h"

int cgcloop_setup(void) { return cgcloop_ready(); }

long cgcloop_collect(int generation) { return (long)cgc_collect(generation); }

void cgcloop_set_enabled(int enabled) {
    if (enabled)
        PyGC_Enable();
    else
        PyGC_Disable();
}
