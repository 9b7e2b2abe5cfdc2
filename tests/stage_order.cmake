cmake_minimum_required(VERSION 3.16)
# The pipeline's stages include only the stages before them (README, "Where things are"):
#   io -> records -> formulas -> capture -> attribution -> aggregation -> reports -> compare -> pipeline
#   -> profiler -> plugins
# and the torch-free stages (flopsprof_core: io, records, formulas, attribution, aggregation, reports)
# include no stage that attaches to LibTorch (capture, pipeline, profiler, plugins). Public headers
# (include/flopsprof/) may be included anywhere. Reads every file under ${SOURCE_DIR}/src; fails
# naming each include that breaks the order.
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<project root> -P stage_order.cmake")
endif()
set(stages io records formulas capture attribution aggregation reports compare pipeline profiler
           plugins)
set(torch_free io records formulas attribution aggregation reports compare)
set(attached capture pipeline profiler plugins)
set(violations "")
set(checked 0)
foreach(stage IN LISTS stages)
  list(FIND stages ${stage} rank)
  file(GLOB_RECURSE files "${SOURCE_DIR}/src/${stage}/*.h" "${SOURCE_DIR}/src/${stage}/*.cpp")
  foreach(file IN LISTS files)
    math(EXPR checked "${checked} + 1")
    file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([a-z_]+)/.*" "\\1" target "${line}")
      list(FIND stages ${target} target_rank)
      if(target_rank EQUAL -1)
        continue()  # flopsprof/ (public) or a third-party header
      endif()
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
      if(target_rank GREATER rank)
        list(APPEND violations "${rel}: ${stage} includes the later stage ${target} (${line})")
      elseif(stage IN_LIST torch_free AND target IN_LIST attached)
        list(APPEND violations "${rel}: the torch-free ${stage} includes ${target} (${line})")
      endif()
    endforeach()
  endforeach()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no source files under ${SOURCE_DIR}/src")
endif()
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "stage order broken:\n  ${text}\nMove the shared type to src/records/ or "
                      "the code to the stage that owns it.")
endif()
message(STATUS "${checked} files: every stage includes only earlier stages")
