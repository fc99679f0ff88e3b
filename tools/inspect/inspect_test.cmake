# cyclegc-inspect on the leak hunt's final snapshot: the census counts the
# leaked widgets, the event bus is among the largest dominators, and the
# chain to a widget goes root -> bus -> listener -> widget.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${LEAK_HUNT} --snapshots ${WORK} OUTPUT_QUIET RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "leak_hunt failed: ${status}")
endif()
execute_process(COMMAND ${INSPECT} ${WORK}/final.heapsnapshot --top 3 --type "(anonymous namespace)::Widget"
                OUTPUT_VARIABLE out RESULT_VARIABLE status)
message("${out}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "cyclegc-inspect failed: ${status}")
endif()
foreach(expected
    "census: "
    "(anonymous namespace)::Widget\n"
    "largest dominators"
    "bytes  (anonymous namespace)::EventBus @"
    "retainer chain of (anonymous namespace)::Widget:\n  (cyclegc roots) @1"
    "-> (anonymous namespace)::EventBus @"
    "-> (anonymous namespace)::Listener @"
    "-> (anonymous namespace)::Widget @")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "cyclegc-inspect's output lacks \"${expected}\"")
  endif()
endforeach()
execute_process(COMMAND ${INSPECT} ${WORK}/missing.heapsnapshot ERROR_VARIABLE err RESULT_VARIABLE status)
if(status EQUAL 0 OR NOT err MATCHES "cannot open")
  message(FATAL_ERROR "a missing file must fail naming it: ${status} ${err}")
endif()
