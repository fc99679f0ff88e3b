# The unit test binary's registration with CTest, and its runs under other
# settings (included from tests/CMakeLists.txt when GoogleTest is found).
if(CYCLEGC_VALGRIND)
  target_compile_definitions(cyclegc_unit_tests PRIVATE CYCLEGC_VALGRIND=1)  # (poison_test.cpp)
endif()
include(GoogleTest)
# (A TIMEOUT for each: a test that hangs, as a child forked with a lock
# held did, fails instead of stopping the suite.)
gtest_discover_tests(cyclegc_unit_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
# The whole suite again under other settings (not under ThreadSanitizer,
# which runs each test of the suite on its own, as the other presets do, but
# is too slow for the suite over again in one process).
if(NOT CYCLEGC_TSAN)
  # The whole unit suite once more without the first large reservation: every
  # page region is a reservation of its own, found through the arena's page
  # map (the collector's cold path).
  add_test(NAME unit.no_arena COMMAND cyclegc_unit_tests --gtest_brief=1)
  set_tests_properties(unit.no_arena PROPERTIES ENVIRONMENT CYCLEGC_NO_ARENA=1 TIMEOUT 900)
  # And with a first reservation of 32 pages, which the suite fills at once:
  # more reservations of that size follow (valgrind, which cannot map 64 GiB,
  # and address-space limits get smaller reservations that may fill).
  add_test(NAME unit.small_arena COMMAND cyclegc_unit_tests --gtest_brief=1)
  set_tests_properties(unit.small_arena PROPERTIES ENVIRONMENT CYCLEGC_ARENA_BYTES=2097152 TIMEOUT 900)
  # And with generation arrays capped at 4 objects, past which young objects
  # go unlisted whatever the heap (Heap::young_unlisted): every test's
  # generations must behave the same.
  add_test(NAME unit.unlisted_young COMMAND cyclegc_unit_tests --gtest_brief=1)
  set_tests_properties(unit.unlisted_young PROPERTIES ENVIRONMENT CYCLEGC_YOUNG_LIST_CAP=4 TIMEOUT 900)
  # And with a pause budget (incremental full collections; CYCLEGC_PAUSE_BUDGET_NS
  # is read when a heap is made): 100 us, and 1 us, with which every slice
  # does only its least work. The semantics must not change.
  add_test(NAME unit.incremental COMMAND cyclegc_unit_tests --gtest_brief=1)
  set_tests_properties(unit.incremental PROPERTIES ENVIRONMENT CYCLEGC_PAUSE_BUDGET_NS=100000 TIMEOUT 900)
  add_test(NAME unit.incremental_tiny COMMAND cyclegc_unit_tests --gtest_brief=1)
  set_tests_properties(unit.incremental_tiny PROPERTIES ENVIRONMENT CYCLEGC_PAUSE_BUDGET_NS=1000 TIMEOUT 900)
endif()
# And the whole suite under a 2 GB address-space limit (not under the
# sanitizers, whose shadow memory cannot live under it): the arena starts
# with a quarter of it and reserves more as it fills.
if(NOT CYCLEGC_INSTRUMENTED)
  add_test(NAME unit.ulimit
           COMMAND sh -c "ulimit -v 2000000 && exec \"$0\" --gtest_brief=1" $<TARGET_FILE:cyclegc_unit_tests>)
  set_tests_properties(unit.ulimit PROPERTIES TIMEOUT 600)
endif()

# Freed slots poisoned for memcheck (CYCLEGC_VALGRIND=ON): the test counts
# memcheck's errors itself (its log shows the one invalid read it makes on
# purpose), so valgrind's exit code is the test's.
find_program(VALGRIND_PROGRAM valgrind)
if(CYCLEGC_VALGRIND AND CYCLEGC_HAVE_MEMCHECK_H AND VALGRIND_PROGRAM AND NOT CYCLEGC_INSTRUMENTED)
  add_test(NAME poison.valgrind
           COMMAND ${VALGRIND_PROGRAM} -q $<TARGET_FILE:cyclegc_unit_tests>
                   --gtest_filter=Poison.MemcheckReportsReadingAFreedObject)
  set_tests_properties(poison.valgrind PROPERTIES TIMEOUT 300)
endif()

