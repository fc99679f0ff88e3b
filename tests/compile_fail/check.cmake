# Compiles one snippet (-fsyntax-only) and checks the outcome:
#   cmake -DCOMPILER=... -DSTD_FLAG=... -DINCLUDE_DIR=... -DSOURCE=... -P check.cmake
# A snippet with lines "// expect: <text>" must fail to compile, with every
# <text> in the diagnostics (the static_assert message); a snippet without
# such a line must compile (it is a control for the compiler command).
file(STRINGS "${SOURCE}" expectations REGEX "^// expect: ")
execute_process(
  COMMAND "${COMPILER}" ${STD_FLAG} -fsyntax-only "-I${INCLUDE_DIR}" "${SOURCE}"
  RESULT_VARIABLE status
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
if(NOT expectations)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${SOURCE} should compile, but did not:\n${output}")
  endif()
  message(STATUS "compiled, as expected")
  return()
endif()
if(status EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must not")
endif()
foreach(line IN LISTS expectations)
  string(REGEX REPLACE "^// expect: " "" text "${line}")
  string(FIND "${output}" "${text}" position)
  if(position EQUAL -1)
    message(FATAL_ERROR "${SOURCE} failed to compile, but without \"${text}\":\n${output}")
  endif()
endforeach()
message(STATUS "rejected with the expected diagnostic")
