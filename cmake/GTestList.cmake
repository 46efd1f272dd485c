# Included by the -P scripts that check filters (CheckFastCoverage.cmake, CheckVariantFilter.cmake), so that
# both read GoogleTest's test list the same way.
#
# sc_gtest_list(EXE FILTER OUT WHO): OUT gets the Suite.Test names that EXE --gtest_list_tests lists for
# --gtest_filter=FILTER; a failing listing is a FATAL_ERROR naming WHO (the calling check).
function(sc_gtest_list exe filter out who)
  execute_process(COMMAND "${exe}" --gtest_list_tests "--gtest_filter=${filter}"
                  OUTPUT_VARIABLE listed ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${who}: ${exe} --gtest_list_tests failed (${rc}): ${errors}")
  endif()
  # Suites start in column 0 and end with '.', their tests are indented by two spaces (a comment may follow).
  set(names "")
  string(REPLACE "\n" ";" rows "${listed}")
  foreach(row IN LISTS rows)
    if(row MATCHES "^([A-Za-z_][A-Za-z0-9_/]*\\.)")
      set(suite "${CMAKE_MATCH_1}")
    elseif(row MATCHES "^  ([A-Za-z_][A-Za-z0-9_/]*)")
      list(APPEND names "${suite}${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()
