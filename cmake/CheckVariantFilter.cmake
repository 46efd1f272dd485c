# cmake -DFILTER=<gtest filter> -DVARIANT=<name> -DEXES=<exe;exe...> -P CheckVariantFilter.cmake
# Fails when the filter of an environment entry (sc_behavior_family ENV_VARIANT) selects no test in any
# executable of its family: a renamed test would otherwise silently lose its entry.
if(NOT DEFINED FILTER OR NOT DEFINED EXES)
  message(FATAL_ERROR "CheckVariantFilter: FILTER and EXES are required")
endif()
set(found "")
foreach(exe IN LISTS EXES)
  execute_process(COMMAND "${exe}" --gtest_list_tests "--gtest_filter=${FILTER}"
                  OUTPUT_VARIABLE listed ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "CheckVariantFilter: ${exe} --gtest_list_tests failed (${rc}): ${errors}")
  endif()
  # Listed tests are the indented lines under their suite.
  string(REGEX MATCHALL "\n  [A-Za-z_][A-Za-z0-9_/]*" tests "\n${listed}")
  if(tests)
    list(APPEND found "${exe}: ${tests}")
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR "environment entry '${VARIANT}': the filter '${FILTER}' selects no test of ${EXES}; "
                      "a test was renamed or removed: update ENV_VARIANT in the family's CMakeLists.txt")
endif()
string(REPLACE "\n  " " " found "${found}")
message(STATUS "environment entry '${VARIANT}': '${FILTER}' selects: ${found}")
