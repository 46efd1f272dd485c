# sc_behavior_family: one behavior family = one folder = one executable per build = one CTest label.
#
# sc_behavior_family(FAMILY <label> SOURCES <file>... [NOGPU] [TIMEOUT <seconds>]
#                    [PER_THREAD_SOURCES <file>...] [NVCC_PER_THREAD_SOURCES <file.cu>...]
#                    [ENV_VARIANT <name> <gtest-filter> <VAR=value>]... [ISOLATED <gtest-pattern>...]
#                    [TWO_GPUS <gtest-pattern>...])
#
# - Builds: the main executable (legacy default stream) from every source; PER_THREAD_SOURCES also as
#   <exe>_ptds with -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 (tests named <family>.ptds.*), and
#   NVCC_PER_THREAD_SOURCES (.cu only) also as <exe>_ptds_nvcc with nvcc --default-stream=per-thread
#   (<family>.ptds_nvcc.*).
# - ENV_VARIANT triples: the tests a filter selects also run in an environment variant <family>.<name>.* with
#   the variable set before CUDA starts; they leave the default entries unless their pattern starts with '+'
#   ("+A:B": A's tests run in both, B's in the entry only).
# - The ctest entries are made when ctest reads the folder (StreamcheckEntries.cmake), from the tests each
#   executable lists, in the mode STREAMCHECK_MODE names at that moment: one entry per test (isolated, the
#   default), or one process per executable and environment variant (fast), where the tests ISOLATED names
#   keep an entry of their own. Labels: the family, and `gpu` or `nogpu` (NOGPU: host tests, no CUDA), and
#   `two_gpus` for the tests TWO_GPUS names (tests that need two GPUs; each is ISOLATED as well).
# - TIMEOUT (default 60 s) bounds one test's entry; a fast entry may take 900 s (StreamcheckEntries.cmake).
set(SC_RUN_FIXTURE streamcheck_run)

function(_sc_add_family_executable exe family variant)
  # The names the test main gives the executable's tests (runner/src/main.cpp).
  set(names "${CMAKE_CURRENT_BINARY_DIR}/${exe}_names.cpp")
  file(GENERATE OUTPUT "${names}" CONTENT "namespace sc {\nextern const char* const kFamily = \"${family}\";\n\
extern const char* const kBuild = \"${variant}\";\n}  // namespace sc\n")
  add_executable(${exe} ${ARGN} "${names}")
  target_link_libraries(${exe} PRIVATE sc::fixtures sc::kernels sc::main GTest::gtest)
  target_compile_definitions(${exe} PRIVATE SC_BUILD_VARIANT="${variant}")
  sc_warnings(${exe})
  if(variant STREQUAL "ptds")
    target_compile_definitions(${exe} PRIVATE CUDA_API_PER_THREAD_DEFAULT_STREAM=1)
  elseif(variant STREQUAL "ptds_nvcc")
    target_compile_options(${exe} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--default-stream=per-thread>)
  endif()
endfunction()

function(sc_behavior_family)
  cmake_parse_arguments(PARSE_ARGV 0 arg "NOGPU" "FAMILY;TIMEOUT"
                        "SOURCES;PER_THREAD_SOURCES;NVCC_PER_THREAD_SOURCES;ENV_VARIANT;ISOLATED;TWO_GPUS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_FAMILY OR NOT arg_SOURCES OR NOT arg_FAMILY MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "sc_behavior_family: FAMILY (lower_snake_case) and SOURCES are required; unknown: "
                        "'${arg_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT DEFINED arg_TIMEOUT)
    set(arg_TIMEOUT 60)
  endif()
  list(LENGTH arg_ENV_VARIANT n)
  math(EXPR rest "${n} % 3")
  if(NOT rest EQUAL 0)
    message(FATAL_ERROR "sc_behavior_family(${arg_FAMILY}): ENV_VARIANT takes triples <name> <gtest-filter> <VAR=value>")
  endif()
  set(kind gpu)
  if(arg_NOGPU)
    set(kind nogpu)
  endif()

  set(exe sc_${arg_FAMILY}_tests)
  _sc_add_family_executable(${exe} ${arg_FAMILY} legacy ${arg_SOURCES} ${arg_PER_THREAD_SOURCES}
                            ${arg_NVCC_PER_THREAD_SOURCES})
  set(targets ${exe})
  set(prefixes "${arg_FAMILY}.")
  if(arg_PER_THREAD_SOURCES)
    _sc_add_family_executable(${exe}_ptds ${arg_FAMILY} ptds ${arg_PER_THREAD_SOURCES})
    list(APPEND targets ${exe}_ptds)
    list(APPEND prefixes "${arg_FAMILY}.ptds.")
  endif()
  if(arg_NVCC_PER_THREAD_SOURCES)
    _sc_add_family_executable(${exe}_ptds_nvcc ${arg_FAMILY} ptds_nvcc ${arg_NVCC_PER_THREAD_SOURCES})
    list(APPEND targets ${exe}_ptds_nvcc)
    list(APPEND prefixes "${arg_FAMILY}.ptds_nvcc.")
  endif()

  # One call per executable and entry, read when ctest reads this folder (StreamcheckEntries.cmake).
  list(JOIN arg_ISOLATED ":" isolated)
  list(JOIN arg_TWO_GPUS ":" two_gpus)
  string(CONCAT common "FAMILY ${arg_FAMILY} KIND ${kind} TIMEOUT ${arg_TIMEOUT} "
                "RESULTS [==[${SC_RESULTS}]==] ISOLATED [==[${isolated}]==] TWO_GPUS [==[${two_gpus}]==]")
  set(calls "set(_sc_cmake [==[${CMAKE_COMMAND}]==])\ninclude([==[${PROJECT_SOURCE_DIR}/runner/cmake/StreamcheckEntries.cmake]==])\n")
  set(all_exes "")
  foreach(target prefix IN ZIP_LISTS targets prefixes)
    list(APPEND all_exes "$<TARGET_FILE:${target}>")
    set(excluded "")
    set(remaining ${arg_ENV_VARIANT})
    while(remaining)
      list(POP_FRONT remaining name filter setting)
      string(REPLACE ":" ";" patterns "${filter}")
      set(plain "")
      foreach(pattern IN LISTS patterns)
        if(pattern MATCHES "^\\+(.+)$")
          set(pattern "${CMAKE_MATCH_1}")
        else()
          list(APPEND excluded "${pattern}")
        endif()
        list(APPEND plain "${pattern}")
      endforeach()
      list(JOIN plain ":" plain)
      string(APPEND calls "sc_entries(EXE [==[$<TARGET_FILE:${target}>]==] PREFIX ${prefix}${name}. "
                          "FILTER [==[${plain}]==] VARIANT ${name} SETS [==[${setting}]==] ${common})\n")
    endwhile()
    set(rest "*")
    if(excluded)
      list(JOIN excluded ":" excluded)
      set(rest "*-${excluded}")
    endif()
    string(APPEND calls "sc_entries(EXE [==[$<TARGET_FILE:${target}>]==] PREFIX ${prefix} "
                        "FILTER [==[${rest}]==] ${common})\n")
  endforeach()
  # Every pattern of an environment variant must select a test of the family (a renamed test would otherwise
  # lose its entry without a word).
  set(remaining ${arg_ENV_VARIANT})
  while(remaining)
    list(POP_FRONT remaining name filter setting)
    string(REGEX REPLACE "(^|:)\\+" "\\1" filter "${filter}")
    string(APPEND calls "sc_patterns_select(FAMILY ${arg_FAMILY} VARIANT ${name} FILTER [==[${filter}]==] "
                        "EXES [==[${all_exes}]==])\n")
  endwhile()
  file(GENERATE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/sc_entries.cmake" CONTENT "${calls}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
               "${CMAKE_BINARY_DIR}/gpu_resource_spec.cmake" "${CMAKE_CURRENT_BINARY_DIR}/sc_entries.cmake")
endfunction()
