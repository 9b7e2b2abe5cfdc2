# Installs flopsprof from BUILD_DIR into a scratch prefix, then configures, builds and runs the
# consumer project against it. Invoked by ctest (see tests/CMakeLists.txt).
set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
# The consumer is built with the same flags as flopsprof (a sanitizer build links its runtime).
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${consumer_build}" -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
run(${CMAKE_COMMAND} --build "${consumer_build}" -j 2)
run("${consumer_build}/consumer")
