# The unit test binary's registration with CTest, and its runs under other
# settings (included from tests/CMakeLists.txt when GoogleTest is found).
if(CYCLEGC_VALGRIND)
  target_compile_definitions(cyclegc_unit_tests PRIVATE CYCLEGC_VALGRIND=1)  # (poison_test.cpp)
endif()
include(GoogleTest)
gtest_discover_tests(cyclegc_unit_tests DISCOVERY_TIMEOUT 60)
# The whole unit suite once more without the address-range arena (pages from
# posix_memalign, "is a GC object" read from the type): the fallback a low
# `ulimit -v` gets. It found a NULL dereference in the collector's visitor.
add_test(NAME unit.no_arena COMMAND cyclegc_unit_tests --gtest_brief=1)
set_tests_properties(unit.no_arena PROPERTIES ENVIRONMENT CYCLEGC_NO_ARENA=1 TIMEOUT 300)
# And with an arena of 32 pages, which the suite fills at once: pages beyond
# it come from posix_memalign while the arena is reserved, so the collector
# must ask those objects' types (valgrind, which cannot map 64 GiB, and
# address-space limits get smaller arenas that may fill).
add_test(NAME unit.small_arena COMMAND cyclegc_unit_tests --gtest_brief=1)
set_tests_properties(unit.small_arena PROPERTIES ENVIRONMENT CYCLEGC_ARENA_BYTES=2097152 TIMEOUT 300)
# And with generation arrays capped at 4 objects, past which young objects
# go unlisted whatever the heap (Heap::young_unlisted): every test's
# generations must behave the same.
add_test(NAME unit.unlisted_young COMMAND cyclegc_unit_tests --gtest_brief=1)
set_tests_properties(unit.unlisted_young PROPERTIES ENVIRONMENT CYCLEGC_YOUNG_LIST_CAP=4 TIMEOUT 300)
# And under a 2 GiB address-space limit (not under the sanitizers, whose
# shadow memory needs more): the arena takes at most a quarter of it.
if(NOT CYCLEGC_SANITIZE)
  add_test(NAME unit.ulimit
           COMMAND sh -c "ulimit -v 2097152 || echo 'unit.ulimit: cannot set the limit here'; exec \"$0\" --gtest_brief=1 --gtest_filter='PagesTest.*:CollectorTest.*'"
                   $<TARGET_FILE:cyclegc_unit_tests>)
  set_tests_properties(unit.ulimit PROPERTIES TIMEOUT 300)
endif()

# Freed slots poisoned for memcheck (CYCLEGC_VALGRIND=ON): the test counts
# memcheck's errors itself (its log shows the one invalid read it makes on
# purpose), so valgrind's exit code is the test's.
find_program(VALGRIND_PROGRAM valgrind)
if(CYCLEGC_VALGRIND AND CYCLEGC_HAVE_MEMCHECK_H AND VALGRIND_PROGRAM AND NOT CYCLEGC_SANITIZE)
  add_test(NAME poison.valgrind
           COMMAND ${VALGRIND_PROGRAM} -q $<TARGET_FILE:cyclegc_unit_tests>
                   --gtest_filter=Poison.MemcheckReportsReadingAFreedObject)
  set_tests_properties(poison.valgrind PROPERTIES TIMEOUT 300)
endif()

