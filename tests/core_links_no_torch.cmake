# The torch-free core's test binary must not need any LibTorch library: reads its dynamic section
# (DT_NEEDED) with readelf. Fails if readelf finds a libtorch*/libc10* entry, or cannot be run.
find_program(READELF readelf REQUIRED)
execute_process(COMMAND ${READELF} -d ${BINARY} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT dynamic MATCHES "NEEDED")
  message(FATAL_ERROR "readelf -d ${BINARY} failed (${rc}) or listed no NEEDED entries")
endif()
string(REGEX MATCHALL "\\[lib(torch|c10)[^]]*\\]" torch_libs "${dynamic}")
if(torch_libs)
  message(FATAL_ERROR "${BINARY} links LibTorch: ${torch_libs}")
endif()
message(STATUS "${BINARY}: no LibTorch library among its NEEDED entries")
