# The packaging tests, invoked by ctest (see tests/CMakeLists.txt). MODE:
#   install   install flopsprof from BUILD_DIR into a scratch prefix; build and run a consumer with
#             find_package, with no CUDA toolkit visible; check its binary needs no CUDA library;
#             then (WITH_CUDA) a consumer that asks for the `cuda` component
#   subdir    the whole project configures without Google Benchmark and CUDA; a consumer builds
#             flopsprof with add_subdirectory, no CUDA toolkit visible, and its own build type
set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
# The consumer is built with the same flags as flopsprof (a sanitizer build links its runtime).
set(no_cuda -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON)
if(MODE STREQUAL "subdir")
  # The whole project (tests, examples, bench) configures without Google Benchmark and CUDA.
  run(${CMAKE_COMMAND} -S "${FLOPSPROF_SOURCE}" -B "${WORK_DIR}/bare" ${no_cuda}
      -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON)
  set(build "${WORK_DIR}/subdir")
  run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${build}" -DFLOPSPROF_SUBDIR=${FLOPSPROF_SOURCE}
      -DCMAKE_BUILD_TYPE= -DCONSUMER_BUILD_TYPE= ${no_cuda} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS} -O1")
  run(${CMAKE_COMMAND} --build "${build}" -j 2 --target consumer)
  run("${build}/consumer")
  return()
endif()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
set(build "${WORK_DIR}/consumer")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${build}" -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release ${no_cuda} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
run(${CMAKE_COMMAND} --build "${build}" -j 2)
run("${build}/consumer")
execute_process(COMMAND readelf -d "${build}/consumer" OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(rc EQUAL 0 AND dynamic MATCHES "libcupti|libcudart|libcuda\\.")
  message(FATAL_ERROR "a CPU consumer needs CUDA libraries:\n${dynamic}")
endif()
if(WITH_CUDA)
  set(build "${WORK_DIR}/consumer_cuda")
  run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${build}" -DCMAKE_PREFIX_PATH=${prefix}
      -DCMAKE_BUILD_TYPE=Release -DFLOPSPROF_REQUIRE_CUDA=ON "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
  if(NOT EXISTS "${prefix}/lib/libflopsprof_cuda.so.0" AND NOT EXISTS
     "${prefix}/lib/x86_64-linux-gnu/libflopsprof_cuda.so.0")
    file(GLOB_RECURSE found "${prefix}/*libflopsprof_cuda*")
    if(NOT found)
      message(FATAL_ERROR "the cuda component's plugin is not installed")
    endif()
  endif()
endif()
