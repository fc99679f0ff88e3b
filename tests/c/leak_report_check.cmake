# Runs PROGRAM with MODE (leak or clean) and checks the leak report it
# prints at exit: cmake -DPROGRAM=... -DMODE=... -P leak_report_check.cmake
execute_process(COMMAND ${PROGRAM} ${MODE} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(output "${out}${err}")
message("${output}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "leak_report_at_exit ${MODE} exited with ${status}")
endif()

# Fails unless `output` matches every regular expression given.
function(expect_lines)
  foreach(pattern IN LISTS ARGN)
    if(NOT output MATCHES "${pattern}")
      message(FATAL_ERROR "the output does not match: ${pattern}")
    endif()
  endforeach()
endfunction()

set(address "0x[0-9a-f]+")
if(MODE STREQUAL "leak")
  expect_lines(
    "leak_report_at_exit: main returns \\(leaking\\)\n"
    "cyclegc leak report: 5 objects \\([0-9]+ bytes\\) still alive after the final collections, of 3 types:\n"
    "  2 x app.Widget \\([0-9]+ bytes\\), e.g. <app.Widget ${address}>\n"
    "    held by <app.Holder ${address}> refcount 1, external 1\n     -> <app.Widget ${address}> refcount 2, external 0\n"
    "  2 x app.Stuck \\([0-9]+ bytes\\), e.g. <app.Stuck ${address}>\n    no root reaches it: uncollectable"
    "  1 x app.Holder \\([0-9]+ bytes\\), e.g. <app.Holder ${address}>\n    held by <app.Holder ${address}> refcount 1, external 1\n")
  # The widget group comes before the holder's (most numerous first), and
  # the widget that the chain ends at is the group's example.
  string(REGEX MATCH "e\\.g\\. <app\\.Widget (${address})>" example "${output}")
  expect_lines("-> <app\\.Widget ${CMAKE_MATCH_1}> refcount 2")
elseif(MODE STREQUAL "clean")
  expect_lines("leak_report_at_exit: main returns \\(clean\\)\n")
  if(output MATCHES "leak report")
    message(FATAL_ERROR "a program that leaks nothing printed a leak report")
  endif()
else()
  message(FATAL_ERROR "MODE must be leak or clean")
endif()
