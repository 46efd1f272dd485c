# cmake -DFILTER=<gtest filter> -DVARIANT=<name> -DEXES=<exe;exe...> -P CheckVariantFilter.cmake
# Fails when a positive pattern of an environment entry's filter (sc_behavior_family ENV_VARIANT) selects no
# test in any executable of its family: a renamed test would otherwise silently lose its entry, also when
# the entry's other patterns still select tests.
if(NOT DEFINED FILTER OR NOT DEFINED EXES)
  message(FATAL_ERROR "CheckVariantFilter: FILTER and EXES are required")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/GTestList.cmake")
# gtest filter: POSITIVE[:POSITIVE...][-NEGATIVE[:NEGATIVE...]]; each positive pattern is checked with the
# negative part applied.
string(FIND "${FILTER}" "-" dash)
if(dash EQUAL -1)
  set(positive "${FILTER}")
  set(negative "")
else()
  string(SUBSTRING "${FILTER}" 0 ${dash} positive)
  string(SUBSTRING "${FILTER}" ${dash} -1 negative)
endif()
string(REPLACE ":" ";" patterns "${positive}")
set(found "")
set(missing "")
foreach(pattern IN LISTS patterns)
  set(selected "")
  foreach(exe IN LISTS EXES)
    sc_gtest_list("${exe}" "${pattern}${negative}" tests CheckVariantFilter)
    if(tests)
      list(JOIN tests " " tests)
      list(APPEND selected "${exe}: ${tests}")
    endif()
  endforeach()
  if(selected)
    list(APPEND found "'${pattern}': ${selected}")
  else()
    list(APPEND missing "${pattern}")
  endif()
endforeach()
if(missing OR NOT patterns)
  list(JOIN missing "', '" missing)
  message(FATAL_ERROR "environment entry '${VARIANT}': the pattern(s) '${missing}' of the filter '${FILTER}' select "
                      "no test of ${EXES}; a test was renamed or removed: update ENV_VARIANT in the family's "
                      "CMakeLists.txt")
endif()
message(STATUS "environment entry '${VARIANT}': ${found}")
