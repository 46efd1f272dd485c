# cmake -DFILTER=<gtest filter> -DVARIANT=<name> -DEXES=<exe;exe...> -P CheckVariantFilter.cmake
# Fails when the filter of an environment entry (sc_behavior_family ENV_VARIANT) selects no test in any
# executable of its family: a renamed test would otherwise silently lose its entry.
if(NOT DEFINED FILTER OR NOT DEFINED EXES)
  message(FATAL_ERROR "CheckVariantFilter: FILTER and EXES are required")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/GTestList.cmake")
set(found "")
foreach(exe IN LISTS EXES)
  sc_gtest_list("${exe}" "${FILTER}" tests CheckVariantFilter)
  if(tests)
    list(JOIN tests " " tests)
    list(APPEND found "${exe}: ${tests}")
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR "environment entry '${VARIANT}': the filter '${FILTER}' selects no test of ${EXES}; "
                      "a test was renamed or removed: update ENV_VARIANT in the family's CMakeLists.txt")
endif()
message(STATUS "environment entry '${VARIANT}': '${FILTER}' selects: ${found}")
