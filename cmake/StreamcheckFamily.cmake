# sc_behavior_family: one behavior family = one folder = one executable = one CTest label.
#
# sc_behavior_family(FAMILY <label> SOURCES <file>...
#                    [NOGPU] [EXCLUSIVE] [TIMEOUT <seconds>]
#                    [PER_THREAD_SOURCES <file>...] [NVCC_PER_THREAD_SOURCES <file.cu>...]
#                    [ENV_VARIANT <name> <gtest-filter> <VAR=value> [<name> <filter> <VAR=value>]...])
#
# - Every test of the family runs in its own process (gtest_discover_tests, DISCOVERY_MODE PRE_TEST, so
#   discovery happens on the machine that runs the tests) and writes its own GoogleTest XML into the run's
#   results folder.
# - Labels: the family, and `gpu` or `nogpu` (NOGPU: host-only tests that never touch CUDA).
# - GPU tests ask CTest for one GPU (RESOURCE_GROUPS gpus:1) and fail on the kernel watchdog banner.
# - EXCLUSIVE: RUN_SERIAL (timing-sensitive families).
# - PER_THREAD_SOURCES: also built as a second executable with -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1;
#   its tests carry the prefix <family>.ptds.
# - NVCC_PER_THREAD_SOURCES (.cu only): also built as a third executable with nvcc
#   --default-stream=per-thread; its tests carry the prefix <family>.ptds_nvcc.
#   Every source is also part of the main (legacy default stream) executable. Each executable gets
#   SC_BUILD_VARIANT="legacy" / "ptds" / "ptds_nvcc".
# - ENV_VARIANT (triples): tests matching a filter run in their own entries (<family>.<name>.Suite.Test)
#   with the variable set before CUDA initializes, and not in the default entries. A filter starting
#   with '+' keeps its tests in the default entries too (a behavior measured with and without the variable).
#   Each entry also gets a host test, <family>.<name>.EnvironmentEntry.FilterSelectsATest (labels: the
#   family and nogpu), that fails when its filter selects no test of the family.
#
# Property values are given one key at a time (LABELS a LABELS b): a list value inside PROPERTIES shifts
# the key/value pairs and later properties are silently lost (CMake issue 17812).
set(SC_WATCHDOG_BANNER "STREAMCHECK-WATCHDOG" CACHE INTERNAL "Printed by a kernel whose watchdog fired")
set(SC_RUN_FIXTURE streamcheck_run)

function(_sc_add_family_executable exe variant)
  add_executable(${exe} ${ARGN})
  target_link_libraries(${exe} PRIVATE sc::fixtures sc::kernels sc::main GTest::gtest)
  target_compile_definitions(${exe} PRIVATE SC_BUILD_VARIANT="${variant}")
  sc_warnings(${exe})
  if(variant STREQUAL "ptds")
    target_compile_definitions(${exe} PRIVATE CUDA_API_PER_THREAD_DEFAULT_STREAM=1)
  elseif(variant STREQUAL "ptds_nvcc")
    target_compile_options(${exe} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--default-stream=per-thread>)
  endif()
endfunction()

# `variant`: the environment entry's name ("" for the default entries) and `sets`, the variable it sets;
# the tests learn both (--streamcheck-variant, --streamcheck-variant-sets) and so tell a variable their
# entry set from one inherited from the caller (an entry exempts only its own variable).
function(_sc_discover exe prefix filter props variant sets)
  set(results "${SC_RESULTS_ROOT}/latest")
  set(args "--streamcheck-results=${results}" "--streamcheck-source=${PROJECT_SOURCE_DIR}"
           "--streamcheck-prefix=${prefix}")
  if(variant)
    list(APPEND args "--streamcheck-variant=${variant}" "--streamcheck-variant-sets=${sets}")
  endif()
  gtest_discover_tests(${exe}
    TEST_PREFIX "${prefix}"
    TEST_FILTER "${filter}"
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    XML_OUTPUT_DIR "${results}/gtest"
    EXTRA_ARGS ${args}
    PROPERTIES ${props} ${ARGN})
endfunction()

function(sc_behavior_family)
  cmake_parse_arguments(PARSE_ARGV 0 arg "NOGPU;EXCLUSIVE" "FAMILY;TIMEOUT"
                        "SOURCES;PER_THREAD_SOURCES;NVCC_PER_THREAD_SOURCES;ENV_VARIANT")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sc_behavior_family: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_FAMILY OR NOT arg_SOURCES)
    message(FATAL_ERROR "sc_behavior_family: FAMILY and SOURCES are required")
  endif()
  if(NOT arg_FAMILY MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "sc_behavior_family: FAMILY '${arg_FAMILY}' must be lower_snake_case")
  endif()
  if(NOT DEFINED arg_TIMEOUT)
    set(arg_TIMEOUT 60)
  endif()
  list(LENGTH arg_ENV_VARIANT n)
  math(EXPR rest_of_three "${n} % 3")
  if(NOT rest_of_three EQUAL 0)
    message(FATAL_ERROR "sc_behavior_family: ENV_VARIANT takes triples <name> <gtest-filter> <VAR=value>")
  endif()
  foreach(source IN LISTS arg_NVCC_PER_THREAD_SOURCES)
    if(NOT source MATCHES "\\.cu$")
      message(FATAL_ERROR "sc_behavior_family: NVCC_PER_THREAD_SOURCES must be .cu files (${source})")
    endif()
  endforeach()

  set(props LABELS ${arg_FAMILY} TIMEOUT ${arg_TIMEOUT} FIXTURES_REQUIRED ${SC_RUN_FIXTURE})
  if(arg_NOGPU)
    list(APPEND props LABELS nogpu)
  else()
    list(APPEND props LABELS gpu FAIL_REGULAR_EXPRESSION "${SC_WATCHDOG_BANNER}" RESOURCE_GROUPS "gpus:1")
  endif()
  if(arg_EXCLUSIVE)
    list(APPEND props RUN_SERIAL ON)
  endif()

  set(exe sc_${arg_FAMILY}_tests)
  _sc_add_family_executable(${exe} legacy ${arg_SOURCES} ${arg_PER_THREAD_SOURCES} ${arg_NVCC_PER_THREAD_SOURCES})
  set(targets ${exe})
  set(prefixes "${arg_FAMILY}.")
  if(arg_PER_THREAD_SOURCES)
    _sc_add_family_executable(${exe}_ptds ptds ${arg_PER_THREAD_SOURCES})
    list(APPEND targets ${exe}_ptds)
    list(APPEND prefixes "${arg_FAMILY}.ptds.")
  endif()
  if(arg_NVCC_PER_THREAD_SOURCES)
    _sc_add_family_executable(${exe}_ptds_nvcc ptds_nvcc ${arg_NVCC_PER_THREAD_SOURCES})
    list(APPEND targets ${exe}_ptds_nvcc)
    list(APPEND prefixes "${arg_FAMILY}.ptds_nvcc.")
  endif()

  foreach(target prefix IN ZIP_LISTS targets prefixes)
    set(excluded "")
    set(remaining ${arg_ENV_VARIANT})
    while(remaining)
      list(POP_FRONT remaining vname vfilter venv)
      if(vfilter MATCHES "^\\+")
        string(SUBSTRING "${vfilter}" 1 -1 vfilter)
      else()
        list(APPEND excluded "${vfilter}")
      endif()
      string(REGEX REPLACE "=.*$" "" vvar "${venv}")
      _sc_discover(${target} "${prefix}${vname}." "${vfilter}" "${props}" "${vname}" "${vvar}" ENVIRONMENT "${venv}")
    endwhile()
    set(rest "*")
    if(excluded)
      list(JOIN excluded ":" joined)
      set(rest "-${joined}")
    endif()
    _sc_discover(${target} "${prefix}" "${rest}" "${props}" "" "")
  endforeach()

  # Every environment entry's filter must select at least one test of the family (in any of its
  # executables): a host test per entry, so a renamed test fails the run instead of losing its entry.
  set(exes "")
  foreach(target IN LISTS targets)
    list(APPEND exes "$<TARGET_FILE:${target}>")
  endforeach()
  set(remaining ${arg_ENV_VARIANT})
  while(remaining)
    list(POP_FRONT remaining vname vfilter venv)
    string(REGEX REPLACE "^\\+" "" vfilter "${vfilter}")
    set(check "${arg_FAMILY}.${vname}.EnvironmentEntry.FilterSelectsATest")
    add_test(NAME ${check}
             COMMAND ${CMAKE_COMMAND} "-DFILTER=${vfilter}" "-DVARIANT=${vname}" "-DEXES=${exes}"
                     -P "${PROJECT_SOURCE_DIR}/cmake/CheckVariantFilter.cmake")
    set_tests_properties(${check} PROPERTIES LABELS ${arg_FAMILY} TIMEOUT 60)
    set_property(TEST ${check} APPEND PROPERTY LABELS nogpu)
  endwhile()
endfunction()
