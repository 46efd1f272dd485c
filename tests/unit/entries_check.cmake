# cmake -DSCRIPT=<runner/cmake/StreamcheckEntries.cmake> -DWORK=<folder> -DEXE=<sc_entries_fake> -P entries_check.cmake
# The entries ctest is given (StreamcheckEntries.cmake), checked without a GPU: add_test and
# set_tests_properties are stand-ins that note what they are asked, and a GoogleTest executable of a few
# tests (entries_fake.cpp, copied into WORK so that its lists are kept there) is the family's. Each mode must
# register every selected test exactly once.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY "${EXE}" DESTINATION "${WORK}")
get_filename_component(name "${EXE}" NAME)
set(exe "${WORK}/${name}")
set(_sc_cmake "${CMAKE_COMMAND}")
include("${SCRIPT}")

set(problems "")
macro(expect what got want)
  if(NOT "${got}" STREQUAL "${want}")
    list(APPEND problems "${what}: got '${got}', want '${want}'")
  endif()
endmacro()

function(add_test name)
  string(REPLACE ";" " " command "${ARGN}")
  set_property(GLOBAL APPEND PROPERTY sc_added "${name}|${command}")
endfunction()
function(set_tests_properties name)
  set_property(GLOBAL APPEND PROPERTY sc_props "${name}|${ARGN}")
endfunction()
# A problem unless the properties set so far hold `text`.
macro(expect_property text problem)
  get_property(props GLOBAL PROPERTY sc_props)
  string(FIND "${props}" "${text}" at)
  if(at EQUAL -1)
    list(APPEND problems "${problem}: ${props}")
  endif()
endmacro()
# The names registered since the last call, and the filter each was given.
function(take out)
  get_property(added GLOBAL PROPERTY sc_added)
  set_property(GLOBAL PROPERTY sc_added "")
  set(names "")
  foreach(entry IN LISTS added)
    string(REGEX MATCH "^[^|]+" name "${entry}")
    string(REGEX MATCH "--gtest_filter=[^ ]*" filter "${entry}")
    list(APPEND names "${name} ${filter}")
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

set(common FAMILY fam KIND gpu TIMEOUT 60 RESULTS /r ISOLATED "Other.First*")

# Isolated mode: one entry per selected test; '.' in a pattern is a dot, not any character.
set(ENV{STREAMCHECK_MODE} "")
sc_entries(EXE "${exe}" PREFIX fam. FILTER "*-Fam.One*:Other.Axb" ${common})
take(got)
expect("isolated default entries" "${got}"
       "fam.Fam.Plain --gtest_filter=Fam.Plain;fam.Fam.Dotty --gtest_filter=Fam.Dotty;fam.Other.FirstLaunch --gtest_filter=Other.FirstLaunch;fam.P/Sweep.Case/0 --gtest_filter=P/Sweep.Case/0")
sc_entries(EXE "${exe}" PREFIX fam.conn1. FILTER "Fam.One*:Other.A.b" VARIANT conn1 SETS "CUDA_DEVICE_MAX_CONNECTIONS=1" ${common})
take(got)
expect("isolated environment variant" "${got}" "fam.conn1.Fam.OneConnection --gtest_filter=Fam.OneConnection")
expect_property("ENVIRONMENT;CUDA_DEVICE_MAX_CONNECTIONS=1" "the environment variant does not set its variable")
expect_property("RESOURCE_GROUPS;gpus:1" "a GPU entry asks CTest for no GPU")

# A test TWO_GPUS names gets the label two_gpus; one that is not ISOLATED too is a failing entry.
sc_entries(EXE "${exe}" PREFIX fam. FILTER "Other.*" ${common} TWO_GPUS "Other.First*")
expect_property("fam.Other.FirstLaunch|PROPERTIES;LABELS;fam;gpu;two_gpus;" "a two-GPU test lacks the label two_gpus")
expect_property("fam.Other.Axb|PROPERTIES;LABELS;fam;gpu;TIMEOUT" "a one-GPU test has another label than gpu")
take(got)
sc_entries(EXE "${exe}" PREFIX fam. FILTER "Other.*" FAMILY fam KIND gpu TIMEOUT 60 RESULTS /r ISOLATED ""
           TWO_GPUS "Other.Axb")
take(got)
expect("a two-GPU test that is not ISOLATED" "${got}" "fam.TwoGpuTestsAreIsolated ")

# Fast mode: one process for the rest, an entry of its own for each ISOLATED test.
set(ENV{STREAMCHECK_MODE} fast)
sc_entries(EXE "${exe}" PREFIX fam. FILTER "*-Fam.One*" ${common})
take(got)
expect("fast default entries" "${got}"
       "fam.Other.FirstLaunch --gtest_filter=Other.FirstLaunch;fam.fast --gtest_filter=Fam.Plain:Fam.Dotty:Other.Axb:P/Sweep.Case/0")

# A pattern of an environment variant that selects nothing is a failing entry; one that selects is none.
sc_patterns_select(FAMILY fam VARIANT conn1 FILTER "Fam.One*:Fam.Renamed" EXES "${exe}")
take(got)
expect("a pattern selecting nothing" "${got}" "fam.conn1.PatternSelectsNoTest ")
sc_patterns_select(FAMILY fam VARIANT conn1 FILTER "Fam.One*" EXES "${exe}")
take(got)
expect("patterns that select" "${got}" "")

# A mode that is neither is a failing entry naming the variable, and nothing else is registered.
set(ENV{STREAMCHECK_MODE} quick)
sc_entries(EXE "${exe}" PREFIX fam. FILTER "*" ${common})
take(got)
expect("an unknown mode" "${got}" "fam.mode ")

if(problems)
  list(JOIN problems "\n  " problems)
  message(FATAL_ERROR "StreamcheckEntries.cmake:\n  ${problems}")
endif()
message(STATUS "entries: both modes register every selected test once")
