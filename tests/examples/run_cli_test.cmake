# Runs PROGRAM with ARGS (separated by "@@") and checks its exit code (EXPECT_EXIT) and that stderr is exactly
# the one line EXPECT_LINE. Used by the train_imdb_cli_* CTest tests.
string(REPLACE "@@" ";" ARGS "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code STREQUAL EXPECT_EXIT)
  message(FATAL_ERROR "exit code ${code}, expected ${EXPECT_EXIT}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT err STREQUAL "${EXPECT_LINE}\n")
  message(FATAL_ERROR "stderr was:\n${err}\nexpected the one line:\n${EXPECT_LINE}")
endif()
