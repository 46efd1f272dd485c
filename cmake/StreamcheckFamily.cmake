# sc_behavior_family: one behavior family = one folder = one executable = one CTest label.
#
# sc_behavior_family(FAMILY <label> SOURCES <file>...
#                    [NOGPU] [TIMEOUT <seconds>]
#                    [PER_THREAD_SOURCES <file>...] [NVCC_PER_THREAD_SOURCES <file.cu>...]
#                    [ENV_VARIANT <name> <gtest-filter> <VAR=value> [<name> <filter> <VAR=value>]...]
#                    [ISOLATED <gtest-pattern>...] [FIRST <gtest-pattern>...])
#
# - Every test of the family runs in its own process (gtest_discover_tests, DISCOVERY_MODE PRE_TEST, so
#   discovery happens on the machine that runs the tests) and writes its own GoogleTest XML into the run's
#   results folder.
# - Labels: the family, and `gpu` or `nogpu` (NOGPU: host-only tests that never touch CUDA).
# - GPU tests ask CTest for one GPU (RESOURCE_GROUPS gpus:1) and fail on the kernel watchdog banner.
# - No GPU entry is RUN_SERIAL: on one GPU the tests of the suite's processes run one process at a time under
#   the GPU lock (fixtures/include/sc/fixtures/gpu_lock.hpp), which each process takes before it creates its
#   CUDA context; with ctest -j and STREAMCHECK_GPU_SLOTS > 1 (cmake/gpu_resource_spec.cmake.in) the next
#   processes start up and the last one exits while one runs its tests. TIMEOUT <seconds> (default 60) is
#   how long a GPU test process may hold the lock; its ctest TIMEOUT adds the wait for the lock
#   (STREAMCHECK_GPU_LOCK_WAIT, below).
# - PER_THREAD_SOURCES: also built as a second executable with -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1;
#   its tests carry the prefix <family>.ptds.
# - NVCC_PER_THREAD_SOURCES (.cu only): also built as a third executable with nvcc
#   --default-stream=per-thread; its tests carry the prefix <family>.ptds_nvcc.
#   Every source is also part of the main (legacy default stream) executable. Each executable gets
#   SC_BUILD_VARIANT="legacy" / "ptds" / "ptds_nvcc".
# - ENV_VARIANT (triples): tests matching a filter run in their own entries (<family>.<name>.Suite.Test)
#   with the variable set before CUDA initializes, and not in the default entries. A pattern of the filter
#   starting with '+' keeps its tests in the default entries too (a behavior measured with and without the
#   variable); each pattern says so for itself ("+A:B": A's tests run in both, B's in the entry only).
#   Each entry also gets a host test, <family>.<name>.EnvironmentEntry.FilterSelectsATest (labels: the
#   family and nogpu), that fails when a pattern of its filter selects no test of the family.
#
# - STREAMCHECK_MODE (cache option, README "Choosing the mode"): `isolated` (default) gives every test its
#   own entry as described above; `fast` gives each executable one entry per environment entry and one for
#   its default entries, `<prefix>fast` (label `fast` besides the family's), running all their tests in
#   one process (--streamcheck-mode=fast; results per test as in isolated mode: fast_mode.hpp). ISOLATED
#   patterns name the tests that must own their process (why: in the family's CMakeLists.txt); in fast mode
#   they keep their own entries, named as in isolated mode. An environment entry whose filter lists a
#   pattern that ISOLATED lists too keeps that pattern's tests in their own entries; the ISOLATED patterns
#   are left out of every fast entry. Fast mode also adds a host test per family,
#   <family>.FastMode.CoversEveryTest, that fails unless the fast and isolated entries together select
#   exactly the tests isolated mode selects, once each. ISOLATED changes nothing in isolated mode.
# - FIRST patterns (fast mode) name tests that need a fresh process but not a process of their own: what ran
#   before them changes what they measure, what runs after them does not. In the default entries, which run
#   many tests, they keep their own entries as ISOLATED ones do. An environment entry that selects a FIRST
#   test runs it in its one process, as its first test: every environment entry passes
#   --streamcheck-first=<all FIRST patterns> and the fixture fails such a test if any test created a context
#   before it in the process; the coverage check also fails unless an entry lists it first and selects at
#   most one, and unless the FIRST patterns select some test of the family. GoogleTest runs the tests of one
#   source file in the order they are defined (after ordering suites by their first test), but across files
#   in an order the linker decides (an H100 machine's toolchain did not run them in SOURCES order): every test
#   an environment entry selects must be defined after its FIRST test, in its file and test suite. An
#   environment entry whose own variable makes a process costly (CUDA_DEVICE_MAX_CONNECTIONS=32 creates 32
#   hardware queues: about 0.6 s of context creation on an H100) is where this saves most.
#
# Property values are given one key at a time (LABELS a LABELS b): a list value inside PROPERTIES shifts
# the key/value pairs and later properties are silently lost (CMake issue 17812).
set(SC_WATCHDOG_BANNER "STREAMCHECK-WATCHDOG" CACHE INTERNAL "Printed by a kernel whose watchdog fired")
set(SC_RUN_FIXTURE streamcheck_run)
set(STREAMCHECK_MODE isolated CACHE STRING
    "isolated: one process per test (default); fast: one process per family executable and environment entry")
set_property(CACHE STREAMCHECK_MODE PROPERTY STRINGS isolated fast)
if(NOT STREAMCHECK_MODE MATCHES "^(isolated|fast)$")
  message(FATAL_ERROR "STREAMCHECK_MODE must be isolated or fast, not '${STREAMCHECK_MODE}'")
endif()
set(STREAMCHECK_FAST_TIMEOUT 900 CACHE STRING "Fast mode: TIMEOUT of an entry that runs a whole family (seconds)")
# The GPU lock's budgets. A GPU entry may hold its GPU's lock for its own limit (the family's TIMEOUT, or
# STREAMCHECK_FAST_TIMEOUT for a fast entry: --streamcheck-hold-limit, enforced by the process itself) and
# wait for it at most SC_LOCK_WAIT seconds (--streamcheck-lock-wait). Its ctest TIMEOUT is the sum plus
# SC_LOCK_MARGIN (process start before the lock, exit after it). With 2 slots per GPU (the default) a process
# waits for one holder at a time, so one that waits for a hung one is not killed by ctest in its place: the
# holder ends at its own limit, and the waiter then runs. More slots, a two-GPU test's peer lock or other
# builds sharing the lock folder can make a waiter wait longer (README, "Running tests in parallel").
set(STREAMCHECK_GPU_LOCK_WAIT "" CACHE STRING
    "Seconds a GPU test process may wait for its GPU's lock (empty: 300 in isolated mode, STREAMCHECK_FAST_TIMEOUT + 60 in fast mode)")
set(SC_LOCK_MARGIN 30)
if(STREAMCHECK_GPU_LOCK_WAIT STREQUAL "")
  if(STREAMCHECK_MODE STREQUAL "fast")
    math(EXPR SC_LOCK_WAIT "${STREAMCHECK_FAST_TIMEOUT} + 60")
  else()
    set(SC_LOCK_WAIT 300)
  endif()
elseif(STREAMCHECK_GPU_LOCK_WAIT MATCHES "^[1-9][0-9]*$")
  set(SC_LOCK_WAIT ${STREAMCHECK_GPU_LOCK_WAIT})
else()
  message(FATAL_ERROR "STREAMCHECK_GPU_LOCK_WAIT must be a whole number of seconds, not '${STREAMCHECK_GPU_LOCK_WAIT}'")
endif()
# For ci/sanitizer.py, which runs one entry at a time (no wait) and takes the entry's own limit from TIMEOUT.
math(EXPR _sc_lock_budget "${SC_LOCK_WAIT} + ${SC_LOCK_MARGIN}")
set(STREAMCHECK_GPU_LOCK_BUDGET ${_sc_lock_budget} CACHE INTERNAL "The part of a GPU entry's TIMEOUT that is the GPU lock's wait")

# A GPU entry's hold limit `limit`: its TIMEOUT (into `out_timeout`) and its budget arguments (`out_args`).
function(_sc_gpu_budget limit out_timeout out_args)
  math(EXPR held_with_margin "${limit} + ${SC_LOCK_MARGIN}")
  if(held_with_margin GREATER SC_LOCK_WAIT)
    message(FATAL_ERROR "streamcheck: a GPU entry may hold its GPU's lock ${limit} s, longer than another may wait "
                        "for it (STREAMCHECK_GPU_LOCK_WAIT ${SC_LOCK_WAIT} s, less a ${SC_LOCK_MARGIN} s margin): "
                        "raise STREAMCHECK_GPU_LOCK_WAIT")
  endif()
  math(EXPR timeout "${limit} + ${SC_LOCK_WAIT} + ${SC_LOCK_MARGIN}")
  set(${out_timeout} ${timeout} PARENT_SCOPE)
  set(${out_args} "--streamcheck-hold-limit=${limit}" "--streamcheck-lock-wait=${SC_LOCK_WAIT}" PARENT_SCOPE)
endfunction()

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
  list(APPEND args ${_sc_budget_args})
  gtest_discover_tests(${exe}
    TEST_PREFIX "${prefix}"
    TEST_FILTER "${filter}"
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    XML_OUTPUT_DIR "${results}/gtest"
    EXTRA_ARGS ${args}
    PROPERTIES ${props} ${ARGN})
endfunction()

# Fast mode: one entry running `filter` of `exe` in one process, with the properties of the family's entries.
function(_sc_add_fast_entry exe prefix filter variant sets env first)
  set(results "${SC_RESULTS_ROOT}/latest")
  set(name "${prefix}fast")
  set(args "--gtest_filter=${filter}" "--streamcheck-results=${results}" "--streamcheck-source=${PROJECT_SOURCE_DIR}"
           "--streamcheck-prefix=${prefix}" "--streamcheck-mode=fast")
  if(variant)
    list(APPEND args "--streamcheck-variant=${variant}" "--streamcheck-variant-sets=${sets}")
  endif()
  if(first)
    list(APPEND args "--streamcheck-first=${first}")
  endif()
  set(timeout ${STREAMCHECK_FAST_TIMEOUT})
  if(NOT _sc_nogpu)
    _sc_gpu_budget(${STREAMCHECK_FAST_TIMEOUT} timeout budget_args)
    list(APPEND args ${budget_args})
  endif()
  add_test(NAME ${name} COMMAND ${exe} ${args})
  # One property per call: a list value (LABELS) must not shift the others (CMake issue 17812).
  set_property(TEST ${name} PROPERTY LABELS ${_sc_family} fast)
  set_property(TEST ${name} PROPERTY TIMEOUT ${timeout})
  set_property(TEST ${name} PROPERTY FIXTURES_REQUIRED ${SC_RUN_FIXTURE})
  set_property(TEST ${name} PROPERTY SKIP_RETURN_CODE 77)  # every test skipped (fast_mode.hpp)
  if(_sc_nogpu)
    set_property(TEST ${name} APPEND PROPERTY LABELS nogpu)
  else()
    set_property(TEST ${name} APPEND PROPERTY LABELS gpu)
    set_property(TEST ${name} PROPERTY FAIL_REGULAR_EXPRESSION "${SC_WATCHDOG_BANNER}")
    set_property(TEST ${name} PROPERTY RESOURCE_GROUPS "gpus:1")
  endif()
  if(env)
    set_property(TEST ${name} PROPERTY ENVIRONMENT "${env}")
  endif()
endfunction()

# One environment entry, after list(POP_FRONT remaining vname vfilter venv) (a macro: it sets the caller's
# variables): each pattern of the filter starting with '+' keeps its tests in the default entries too, and
# loses the '+'; every other pattern is added to `excluded` (the default entries leave its tests out);
# `vfilter` becomes the filter without the '+' marks and `vvar` the name of the variable the entry sets.
macro(_sc_variant_filter)
  string(REPLACE ":" ";" _sc_patterns "${vfilter}")
  set(_sc_plain "")
  foreach(_sc_pattern IN LISTS _sc_patterns)
    if(_sc_pattern MATCHES "^\\+")
      string(SUBSTRING "${_sc_pattern}" 1 -1 _sc_pattern)
    else()
      list(APPEND excluded "${_sc_pattern}")
    endif()
    list(APPEND _sc_plain "${_sc_pattern}")
  endforeach()
  list(JOIN _sc_plain ":" vfilter)
  string(REGEX REPLACE "=.*$" "" vvar "${venv}")
endmacro()

# Fast mode's entries of a family (a macro: it reads sc_behavior_family's variables). Per executable: for each
# environment entry, its tests not ISOLATED in one process (a FIRST one first) and its ISOLATED ones in entries
# of their own; then the default entries the same way, with FIRST tests in entries of their own. The filters
# of every entry go to the family's coverage check.
macro(_sc_family_fast_entries)
  list(JOIN arg_ISOLATED ":" _sc_iso)
  list(JOIN arg_FIRST ":" _sc_first)
  set(_sc_own_default ${arg_ISOLATED} ${arg_FIRST})
  list(JOIN _sc_own_default ":" _sc_own_default)
  set(_sc_checks "")
  foreach(target prefix IN ZIP_LISTS targets prefixes)
    set(excluded "")
    set(remaining ${arg_ENV_VARIANT})
    while(remaining)
      list(POP_FRONT remaining vname vfilter venv)
      _sc_variant_filter()  # positive patterns only (checked in sc_behavior_family)
      string(REPLACE ":" ";" patterns "${vfilter}")
      set(fast_patterns "")
      set(own_patterns "")
      foreach(pattern IN LISTS patterns)
        if(pattern IN_LIST arg_ISOLATED)
          list(APPEND own_patterns "${pattern}")
        else()
          list(APPEND fast_patterns "${pattern}")
        endif()
      endforeach()
      if(fast_patterns)
        list(JOIN fast_patterns ":" joined)
        if(_sc_iso)
          string(APPEND joined "-${_sc_iso}")
        endif()
        # Every FIRST pattern goes to every environment entry, whatever pattern of its filter selects the
        # test: the guard and the order check then hold for a FIRST test however the entry reaches it.
        _sc_add_fast_entry(${target} "${prefix}${vname}." "${joined}" "${vname}" "${vvar}" "${venv}" "${_sc_first}")
        list(APPEND _sc_checks "$<TARGET_FILE:${target}>|${vname}|fast|${joined}")
        if(_sc_first)
          list(APPEND _sc_checks "$<TARGET_FILE:${target}>|${vname}|first|${joined}|${_sc_first}")
        endif()
      endif()
      if(own_patterns)
        list(JOIN own_patterns ":" joined)
        _sc_discover(${target} "${prefix}${vname}." "${joined}" "${props}" "${vname}" "${vvar}" ENVIRONMENT "${venv}")
        list(APPEND _sc_checks "$<TARGET_FILE:${target}>|${vname}|fast|${joined}")
      endif()
      list(APPEND _sc_checks "$<TARGET_FILE:${target}>|${vname}|isolated|${vfilter}")
    endwhile()
    set(rest "*")
    set(fast_rest "*")
    list(JOIN excluded ":" joined)
    if(excluded)
      set(rest "-${joined}")
    endif()
    if(excluded OR _sc_own_default)
      set(fast_rest "*-${joined}")
      if(excluded AND _sc_own_default)
        string(APPEND fast_rest ":")
      endif()
      string(APPEND fast_rest "${_sc_own_default}")
    endif()
    _sc_add_fast_entry(${target} "${prefix}" "${fast_rest}" "" "" "" "")
    list(APPEND _sc_checks "$<TARGET_FILE:${target}>|-|isolated|${rest}" "$<TARGET_FILE:${target}>|-|fast|${fast_rest}")
    if(_sc_own_default)
      set(own "${_sc_own_default}")
      if(excluded)
        string(APPEND own "-${joined}")
      endif()
      _sc_discover(${target} "${prefix}" "${own}" "${props}" "" "")
      list(APPEND _sc_checks "$<TARGET_FILE:${target}>|-|fast|${own}")
    endif()
  endforeach()
  # Per executable and entry (environment entry name, - for the default ones), the fast entries' filters
  # together must select what the isolated filter selects, each test once: lines exe|entry|mode|filter.
  set(_sc_check "${arg_FAMILY}.FastMode.CoversEveryTest")
  list(JOIN _sc_checks "@@" _sc_checks_arg)
  add_test(NAME ${_sc_check}
           COMMAND ${CMAKE_COMMAND} "-DCHECKS=${_sc_checks_arg}" -P "${PROJECT_SOURCE_DIR}/cmake/CheckFastCoverage.cmake")
  set_tests_properties(${_sc_check} PROPERTIES LABELS ${arg_FAMILY} TIMEOUT 120)
  set_property(TEST ${_sc_check} APPEND PROPERTY LABELS nogpu)
  set_property(TEST ${_sc_check} APPEND PROPERTY LABELS fast)
endmacro()

function(sc_behavior_family)
  cmake_parse_arguments(PARSE_ARGV 0 arg "NOGPU" "FAMILY;TIMEOUT"
                        "SOURCES;PER_THREAD_SOURCES;NVCC_PER_THREAD_SOURCES;ENV_VARIANT;ISOLATED;FIRST")
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
  # The resource spec for a ctest run of this folder alone too (it reads itself once per run).
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${CMAKE_BINARY_DIR}/gpu_resource_spec.cmake")
  foreach(pattern IN LISTS arg_FIRST)
    if(pattern IN_LIST arg_ISOLATED)
      message(FATAL_ERROR "sc_behavior_family(${arg_FAMILY}): '${pattern}' is both ISOLATED and FIRST")
    endif()
  endforeach()
  list(LENGTH arg_ENV_VARIANT n)
  math(EXPR rest_of_three "${n} % 3")
  if(NOT rest_of_three EQUAL 0)
    message(FATAL_ERROR "sc_behavior_family: ENV_VARIANT takes triples <name> <gtest-filter> <VAR=value>")
  endif()
  # Environment filters are positive patterns (fast mode composes them with its own negative parts, and the
  # per-pattern '+' and the filter check read them pattern by pattern): no '-', no empty pattern.
  set(remaining ${arg_ENV_VARIANT})
  while(remaining)
    list(POP_FRONT remaining vname vfilter venv)
    if(vfilter MATCHES "-" OR vfilter MATCHES "(^:|::|:$|^$|(^|:)\\+(:|$))")
      message(FATAL_ERROR "sc_behavior_family(${arg_FAMILY}): the filter '${vfilter}' of environment entry "
                          "${vname} must be ':'-separated positive patterns (no '-', none empty)")
    endif()
  endwhile()
  foreach(source IN LISTS arg_NVCC_PER_THREAD_SOURCES)
    if(NOT source MATCHES "\\.cu$")
      message(FATAL_ERROR "sc_behavior_family: NVCC_PER_THREAD_SOURCES must be .cu files (${source})")
    endif()
  endforeach()

  set(timeout ${arg_TIMEOUT})
  set(_sc_budget_args "")
  if(NOT arg_NOGPU)
    _sc_gpu_budget(${arg_TIMEOUT} timeout _sc_budget_args)
  endif()
  set(props LABELS ${arg_FAMILY} TIMEOUT ${timeout} FIXTURES_REQUIRED ${SC_RUN_FIXTURE})
  if(arg_NOGPU)
    list(APPEND props LABELS nogpu)
  else()
    list(APPEND props LABELS gpu FAIL_REGULAR_EXPRESSION "${SC_WATCHDOG_BANNER}" RESOURCE_GROUPS "gpus:1")
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

  set(_sc_family ${arg_FAMILY})
  set(_sc_nogpu ${arg_NOGPU})
  if(STREAMCHECK_MODE STREQUAL "fast")
    _sc_family_fast_entries()
  else()
  foreach(target prefix IN ZIP_LISTS targets prefixes)
    set(excluded "")
    set(remaining ${arg_ENV_VARIANT})
    while(remaining)
      list(POP_FRONT remaining vname vfilter venv)
      _sc_variant_filter()
      _sc_discover(${target} "${prefix}${vname}." "${vfilter}" "${props}" "${vname}" "${vvar}" ENVIRONMENT "${venv}")
    endwhile()
    set(rest "*")
    if(excluded)
      list(JOIN excluded ":" joined)
      set(rest "-${joined}")
    endif()
    _sc_discover(${target} "${prefix}" "${rest}" "${props}" "" "")
  endforeach()
  endif()

  # Every environment entry's filter must select at least one test of the family (in any of its
  # executables): a host test per entry, so a renamed test fails the run instead of losing its entry.
  set(exes "")
  foreach(target IN LISTS targets)
    list(APPEND exes "$<TARGET_FILE:${target}>")
  endforeach()
  set(remaining ${arg_ENV_VARIANT})
  while(remaining)
    list(POP_FRONT remaining vname vfilter venv)
    string(REGEX REPLACE "(^|:)\\+" "\\1" vfilter "${vfilter}")
    set(check "${arg_FAMILY}.${vname}.EnvironmentEntry.FilterSelectsATest")
    add_test(NAME ${check}
             COMMAND ${CMAKE_COMMAND} "-DFILTER=${vfilter}" "-DVARIANT=${vname}" "-DEXES=${exes}"
                     -P "${PROJECT_SOURCE_DIR}/cmake/CheckVariantFilter.cmake")
    set_tests_properties(${check} PROPERTIES LABELS ${arg_FAMILY} TIMEOUT 60)
    set_property(TEST ${check} APPEND PROPERTY LABELS nogpu)
  endwhile()
endfunction()
