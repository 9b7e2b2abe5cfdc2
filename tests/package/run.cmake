# The packaging tests, invoked by ctest (see tests/CMakeLists.txt). MODE:
#   install    install flopsprof from BUILD_DIR into a scratch prefix; build and run a consumer with
#              find_package, with no CUDA toolkit visible; check its binary needs no CUDA library;
#              then (WITH_CUDA) a consumer that asks for the `cuda` component
#   buildtree  the same consumers against a build folder (flopsprof_DIR, nothing installed): BUILD_DIR
#              (WITH_CUDA: the consumer must find the build folder's CUDA plugin at run time, as
#              programs built there do); without BUILD_DIR, a build folder of FLOPSPROF_SOURCE made
#              here, the whole project configured without CUDA and Google Benchmark (only the
#              library built)
#   subdir     a consumer builds flopsprof with add_subdirectory, no CUDA toolkit visible, and its
#              own build type
# The two that build the library again do it as a unity build at -O0 (64 s of CPU on this kind of
# machine, 76 s at -O1; and proof that a consumer's CMAKE_UNITY_BUILD=ON builds flopsprof).
cmake_minimum_required(VERSION 3.18)  # IN_LIST (CMP0057) in script mode
set(unity -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0)
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
  set(build "${WORK_DIR}/subdir")
  run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${build}" -DFLOPSPROF_SUBDIR=${FLOPSPROF_SOURCE}
      -DCMAKE_BUILD_TYPE= -DCONSUMER_BUILD_TYPE= ${no_cuda} ${unity}
      "-DCMAKE_CXX_FLAGS=${CXX_FLAGS} -O0")
  run(${CMAKE_COMMAND} --build "${build}" -j 2 --target consumer)
  run("${build}/consumer")
  return()
endif()

# find_package(flopsprof) with `where` (-DCMAKE_PREFIX_PATH=... or -Dflopsprof_DIR=...): a CPU
# consumer, built and run; then (WITH_CUDA) one that asks for the `cuda` component, configured.
function(consume where)
  set(build "${WORK_DIR}/consumer")
  run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${build}" ${where} -DCMAKE_BUILD_TYPE=Release
      ${no_cuda} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
  run(${CMAKE_COMMAND} --build "${build}" -j 2)
  execute_process(COMMAND readelf -d "${build}/consumer" OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND dynamic MATCHES "libcupti|libcudart|libcuda\\.")
    message(FATAL_ERROR "a CPU consumer needs CUDA libraries:\n${dynamic}")
  endif()
  if(WITH_CUDA AND MODE STREQUAL "buildtree")
    # The build folder's plugin, found as the library looks for it: through the program's RUNPATH
    # (checked on the binary: under ASan, dlopen's interceptor is the caller and RUNPATH is not
    # searched, so the run-time check is left out there).
    string(REGEX MATCH "Library r(un)?path: \\[([^]\n]*)\\]" runpath "${dynamic}")
    string(REPLACE ":" ";" runpath "${CMAKE_MATCH_2}")
    if(NOT EXISTS "${BUILD_DIR}/libflopsprof_cuda.so.0" OR NOT "${BUILD_DIR}" IN_LIST runpath)
      message(FATAL_ERROR "the consumer's RUNPATH does not name the build folder's CUDA plugin "
                          "(${BUILD_DIR}/libflopsprof_cuda.so.0):\n${dynamic}")
    endif()
    if(CXX_FLAGS MATCHES "sanitize=address")
      run("${build}/consumer")
    else()
      run("${build}/consumer" --expect-plugin)
    endif()
  else()
    run("${build}/consumer")
  endif()
  if(WITH_CUDA)
    run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/consumer_cuda" ${where}
        -DCMAKE_BUILD_TYPE=Release -DFLOPSPROF_REQUIRE_CUDA=ON "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
  endif()
endfunction()

if(MODE STREQUAL "buildtree")
  if(NOT BUILD_DIR)
    set(BUILD_DIR "${WORK_DIR}/flopsprof")
    set(WITH_CUDA OFF)
    run(${CMAKE_COMMAND} -S "${FLOPSPROF_SOURCE}" -B "${BUILD_DIR}" ${no_cuda}
        -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON -DCMAKE_BUILD_TYPE=Release ${unity}
        "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
    run(${CMAKE_COMMAND} --build "${BUILD_DIR}" -j 2 --target flopsprof)
    if(EXISTS "${BUILD_DIR}/flopsprofCudaTargets.cmake")
      message(FATAL_ERROR "a build folder without the CUDA plugin exports flopsprof::cuda")
    endif()
  endif()
  consume(-Dflopsprof_DIR=${BUILD_DIR})
  return()
endif()

set(prefix "${WORK_DIR}/prefix")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
consume(-DCMAKE_PREFIX_PATH=${prefix})
if(WITH_CUDA AND NOT EXISTS "${prefix}/lib/libflopsprof_cuda.so.0" AND NOT EXISTS
   "${prefix}/lib/x86_64-linux-gnu/libflopsprof_cuda.so.0")
  file(GLOB_RECURSE found "${prefix}/*libflopsprof_cuda*")
  if(NOT found)
    message(FATAL_ERROR "the cuda component's plugin is not installed")
  endif()
endif()
