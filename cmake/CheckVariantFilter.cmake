# cmake -DFILTER=<gtest filter> -DVARIANT=<name> -DEXES=<exe;exe...> -P CheckVariantFilter.cmake
# Fails when a pattern of an environment entry's filter (sc_behavior_family ENV_VARIANT: ':'-separated
# positive patterns, none empty, which sc_behavior_family checks when it is configured) selects no test in
# any executable of its family: a renamed test would otherwise silently lose its entry, also when the
# entry's other patterns still select tests.
cmake_policy(VERSION 3.16)
if(NOT DEFINED FILTER OR NOT DEFINED EXES)
  message(FATAL_ERROR "CheckVariantFilter: FILTER and EXES are required")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/GTestList.cmake")
string(REPLACE ":" ";" patterns "${FILTER}")
set(found "")
set(missing "")
foreach(pattern IN LISTS patterns)
  set(selected "")
  foreach(exe IN LISTS EXES)
    sc_gtest_list("${exe}" "${pattern}" tests CheckVariantFilter)
    if(tests)
      list(JOIN tests " " tests)
      list(APPEND selected "${exe}: ${tests}")
    endif()
  endforeach()
  if(selected)
    list(JOIN selected "; " selected)
    list(APPEND found "'${pattern}' selects ${selected}")
  else()
    list(APPEND missing "${pattern}")
  endif()
endforeach()
if(missing)
  list(JOIN missing "', '" missing)
  message(FATAL_ERROR "environment entry '${VARIANT}': the pattern(s) '${missing}' of the filter '${FILTER}' select "
                      "no test of ${EXES}; a test was renamed or removed: update ENV_VARIANT in the family's "
                      "CMakeLists.txt")
endif()
list(JOIN found " | " found)
message(STATUS "environment entry '${VARIANT}': ${found}")
