# Read by ctest, not by CMake: each family folder's sc_entries.cmake (StreamcheckFamily.cmake) includes this
# file and calls sc_entries() once per executable and entry, so the ctest entries follow the tests each
# executable lists and the mode chosen when ctest runs (STREAMCHECK_MODE):
#   isolated (unset): one entry per test, <prefix><Suite>.<Test>, one process per test;
#   fast: one entry per executable and environment variant, <prefix>fast, one process for its tests, and an
#         entry of its own for each test its family calls ISOLATED (a test that must own its process).
# Every entry writes GoogleTest's XML to <its run's folder>/gtest/<entry>.xml. `cmake -DSC_FAIL=<text> -P <this file>`
# fails with the text: the entry ctest runs where a family cannot be listed or a pattern selects nothing.
if(DEFINED SC_FAIL)
  message(FATAL_ERROR "${SC_FAIL}")
endif()
set(_sc_entries_script "${CMAKE_CURRENT_LIST_FILE}")
set(_sc_fast_timeout 900)  # seconds for a fast entry; a test's own entry has its family's TIMEOUT

# _sc_list(OUT EXE FILTER): the Suite.Test names EXE lists under the GoogleTest filter FILTER (GoogleTest itself
# selects: --gtest_list_tests --gtest_filter), kept in <EXE>.listed/<hash of FILTER> until EXE is rebuilt;
# OUT_error says why there are none when listing failed.
function(_sc_list out exe filter)
  string(MD5 key "${filter}")
  set(kept "${exe}.listed/${key}")
  set(${out} "" PARENT_SCOPE)
  set(${out}_error "" PARENT_SCOPE)
  if(NOT EXISTS "${exe}")
    set(${out}_error "${exe} is not built (cmake --build first)" PARENT_SCOPE)
    return()
  endif()
  if(NOT EXISTS "${kept}" OR "${exe}" IS_NEWER_THAN "${kept}")
    execute_process(COMMAND "${exe}" --gtest_list_tests "--gtest_filter=${filter}" OUTPUT_VARIABLE listed
                    ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 60)
    if(NOT rc EQUAL 0)
      set(${out}_error "${exe} --gtest_list_tests failed (${rc}): ${errors}" PARENT_SCOPE)
      return()
    endif()
    # Suites start in column 0 and end with '.', their tests are indented by two (a comment may follow).
    set(names "")
    string(REPLACE "\n" ";" rows "${listed}")
    foreach(row IN LISTS rows)
      if(row MATCHES "^([A-Za-z_][A-Za-z0-9_/]*\\.)")
        set(suite "${CMAKE_MATCH_1}")
      elseif(row MATCHES "^  ([A-Za-z_][A-Za-z0-9_/]*)")
        string(APPEND names "${suite}${CMAKE_MATCH_1}\n")
      endif()
    endforeach()
    file(MAKE_DIRECTORY "${exe}.listed")
    string(RANDOM LENGTH 8 tag)  # written aside and renamed: a ctest run beside this one reads it whole
    file(WRITE "${kept}.${tag}" "${names}")
    file(RENAME "${kept}.${tag}" "${kept}")
  endif()
  file(STRINGS "${kept}" names)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# _sc_among(OUT EXE PATTERNS TESTS): the TESTS that EXE lists under PATTERNS (a list, one GoogleTest filter),
# none when there are no patterns; OUT_error as _sc_list's. list(FIND), not if(IN_LIST): ctest reads this file.
function(_sc_among out exe patterns tests)
  set(${out} "" PARENT_SCOPE)
  set(${out}_error "" PARENT_SCOPE)
  if(NOT patterns)
    return()
  endif()
  list(JOIN patterns ":" filter)
  _sc_list(listed "${exe}" "${filter}")
  set(${out}_error "${listed_error}" PARENT_SCOPE)
  set(found "")
  foreach(name IN LISTS listed)
    list(FIND tests "${name}" at)
    if(NOT at EQUAL -1)
      list(APPEND found "${name}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _sc_failing(NAME TEXT LABELS): an entry that fails with TEXT.
function(_sc_failing name text labels)
  string(REPLACE ";" "," text "${text}")  # one argument
  add_test("${name}" "${_sc_cmake}" "-DSC_FAIL=${text}" -P "${_sc_entries_script}")
  set_tests_properties("${name}" PROPERTIES LABELS "${labels}")
endfunction()

# sc_entries(EXE <exe> PREFIX <prefix> FILTER <gtest filter> [VARIANT <name> SETS <VAR=value>] FAMILY <label>
#            KIND gpu|nogpu TIMEOUT <s> RESULTS <run folder> ISOLATED <patterns> [TWO_GPUS <patterns>])
# The tests TWO_GPUS selects also get the label two_gpus (ci/run_suite.sh runs them on pairs of GPUs); each must
# be ISOLATED too, so that no fast entry mixes them with one-GPU tests.
function(sc_entries)
  cmake_parse_arguments(arg "" "EXE;PREFIX;FILTER;VARIANT;SETS;FAMILY;KIND;TIMEOUT;RESULTS;ISOLATED;TWO_GPUS" ""
                        ${ARGN})
  set(labels "${arg_FAMILY};${arg_KIND}")
  set(mode "$ENV{STREAMCHECK_MODE}")
  if(NOT mode MATCHES "^(|isolated|fast)$")
    _sc_failing("${arg_PREFIX}mode" "STREAMCHECK_MODE must be isolated or fast (or unset), not '${mode}'" "${labels}")
    return()
  endif()
  _sc_list(tests "${arg_EXE}" "${arg_FILTER}")
  if(tests_error)
    _sc_failing("${arg_PREFIX}list" "${tests_error}" "${labels}")
    return()
  endif()
  # The entry's tests that ISOLATED and TWO_GPUS name.
  _sc_among(own "${arg_EXE}" "${arg_ISOLATED}" "${tests}")
  _sc_among(two "${arg_EXE}" "${arg_TWO_GPUS}" "${tests}")
  if(own_error OR two_error)
    _sc_failing("${arg_PREFIX}list" "${own_error}${two_error}" "${labels}")
    return()
  endif()
  set(alone "${two}")
  if(own)
    list(REMOVE_ITEM alone ${own})
  endif()
  if(alone)
    _sc_failing("${arg_PREFIX}TwoGpuTestsAreIsolated" "${alone} need two GPUs but are not ISOLATED" "${labels}")
    return()
  endif()
  set(args "--streamcheck-results=${arg_RESULTS}")
  if(arg_VARIANT)
    string(REGEX REPLACE "=.*" "" variable "${arg_SETS}")
    list(APPEND args "--streamcheck-variant=${arg_VARIANT},${variable}")
  endif()
  set(shared "")
  if(mode STREQUAL "fast")
    set(shared "${tests}")
    if(own)
      list(REMOVE_ITEM shared ${own})
    endif()
    set(tests "${own}")
  endif()
  set(entries "")
  foreach(test IN LISTS tests)
    list(APPEND entries "${arg_PREFIX}${test}|${test}|${arg_TIMEOUT}")
  endforeach()
  if(shared)
    list(JOIN shared ":" filter)
    list(APPEND entries "${arg_PREFIX}fast|${filter}|${_sc_fast_timeout}")
  endif()
  foreach(entry IN LISTS entries)
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 name)
    list(GET entry 1 filter)
    list(GET entry 2 timeout)
    # The process writes into its run's folder under ARG_RESULTS (runner/include/sc/runner/run_context.hpp).
    add_test("${name}" "${arg_EXE}" "--gtest_filter=${filter}" "--gtest_output=xml:${name}.xml" ${args})
    # 77: no test of the process failed and none passed (runner/include/sc/runner/process.hpp).
    set(entry_labels "${labels}")
    list(FIND two "${filter}" at)  # read by ctest, where if(IN_LIST) is not known
    if(NOT at EQUAL -1)
      list(APPEND entry_labels two_gpus)
    endif()
    set_tests_properties("${name}" PROPERTIES LABELS "${entry_labels}" TIMEOUT "${timeout}" SKIP_RETURN_CODE 77
                         FIXTURES_REQUIRED streamcheck_run)
    if(arg_KIND STREQUAL "gpu")
      set_tests_properties("${name}" PROPERTIES RESOURCE_GROUPS "gpus:1" FAIL_REGULAR_EXPRESSION "STREAMCHECK-WATCHDOG")
    endif()
    if(arg_SETS)
      set_tests_properties("${name}" PROPERTIES ENVIRONMENT "${arg_SETS}")
    endif()
  endforeach()
endfunction()

# sc_patterns_select(FAMILY <label> VARIANT <name> FILTER <patterns> EXES <exe;...>): a failing entry unless
# every pattern of an environment variant selects a test of one of the family's executables (a renamed test
# would otherwise lose its entry without a word).
function(sc_patterns_select)
  cmake_parse_arguments(arg "" "FAMILY;VARIANT;FILTER" "EXES" ${ARGN})
  set(all "")
  string(REPLACE ":" ";" patterns "${arg_FILTER}")
  set(missing "")
  foreach(pattern IN LISTS patterns)
    set(selected "")
    foreach(exe IN LISTS arg_EXES)
      _sc_list(listed "${exe}" "*")
      list(APPEND all ${listed})
      _sc_list(listed "${exe}" "${pattern}")
      list(APPEND selected ${listed})
    endforeach()
    if(NOT selected)
      list(APPEND missing "${pattern}")
    endif()
  endforeach()
  if(missing AND all)
    list(JOIN missing "', '" missing)
    _sc_failing("${arg_FAMILY}.${arg_VARIANT}.PatternSelectsNoTest"
                "environment variant '${arg_VARIANT}': '${missing}' selects no test of ${arg_FAMILY}; a test was renamed or removed: update ENV_VARIANT in its CMakeLists.txt"
                "${arg_FAMILY}")
  endif()
endfunction()
