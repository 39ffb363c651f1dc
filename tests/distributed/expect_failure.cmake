# Runs COMMAND (arguments separated by "@@") and passes when it ends within TIMEOUT seconds with a
# nonzero exit code and its output contains every EXPECT (separated by "@@"): a failing rank must end
# the whole job with a message naming it, never hang. Used by the ddp_* fault tests.
string(REPLACE "@@" ";" COMMAND "${COMMAND}")
string(REPLACE "@@" ";" EXPECT "${EXPECT}")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${TIMEOUT})
if(code MATCHES "timeout|Process terminated due to timeout")
  message(FATAL_ERROR "the job did not end within ${TIMEOUT} s (a hang)\nstdout: ${out}\nstderr: ${err}")
endif()
if(code STREQUAL "0")
  message(FATAL_ERROR "the job exited 0, expected a failure\nstdout: ${out}\nstderr: ${err}")
endif()
foreach(text IN LISTS EXPECT)
  string(FIND "${out}${err}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the output lacks '${text}'\nstdout: ${out}\nstderr: ${err}")
  endif()
endforeach()
message(STATUS "exit code ${code}; stderr:\n${err}")
