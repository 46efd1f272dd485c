# sc_behavior_family: one behavior family = one folder (tests/<family>/, the folder's name is the family's) = one
# CTest label.
#
# sc_behavior_family(FAMILY <label> SOURCES <file>... [NOGPU] [TIMEOUT <seconds>]
#                    [PER_THREAD_SOURCES <file>...] [NVCC_PER_THREAD_SOURCES <file>...]
#                    [ENV_VARIANT <name> <gtest-filter> <VAR=value>]... [ISOLATED <gtest-pattern>...]
#                    [TWO_GPUS <gtest-pattern>...])
#
# - Builds: the GPU families' sources go into the suite's executables, one per build (sc_suite_executables):
#   sc_suite (legacy default stream) from every source; PER_THREAD_SOURCES also into sc_suite_ptds with
#   -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 (tests named <family>.ptds.*), and NVCC_PER_THREAD_SOURCES also into
#   sc_suite_ptds_nvcc, their .cu files with nvcc --default-stream=per-thread (<family>.ptds_nvcc.*). A NOGPU
#   family (host tests, no CUDA) has an executable of its own, sc_<family>_tests.
# - ENV_VARIANT triples: the tests a filter selects also run in an environment variant <family>.<name>.* with
#   the variable set before CUDA starts; they leave the default entries unless their pattern starts with '+'
#   ("+A:B": A's tests run in both, B's in the variant only).
# - The ctest entries are made when ctest reads the build folder (runner/cmake/entries.py), from the tests each
#   executable lists, in the mode STREAMCHECK_MODE names at that moment: one entry per test (isolated, the
#   default), or one process per executable and environment variant (fast), where the tests ISOLATED names keep
#   an entry of their own. Labels: the family (a fast entry has every family it holds), `gpu` or `nogpu`, and
#   `two_gpus` for the tests TWO_GPUS names (tests that need two GPUs; each is ISOLATED as well).
# - TIMEOUT (default 60 s) bounds one test's entry; a fast entry may take 900 s (entries.py).
set(SC_RUN_FIXTURE streamcheck_run)

# A CMake list as a JSON array of strings.
function(_sc_json_list out)
  set(items "")
  foreach(item IN LISTS ARGN)
    string(REPLACE "\\" "\\\\" item "${item}")
    string(REPLACE "\"" "\\\"" item "${item}")
    list(APPEND items "\"${item}\"")
  endforeach()
  list(JOIN items ", " items)
  set(${out} "[${items}]" PARENT_SCOPE)
endfunction()

# Compiles a family's sources for one build ("legacy", "ptds", "ptds_nvcc") into an object library the suite's
# executable of that build links.
function(_sc_family_objects family build)
  set(target sc_${family}_${build})
  set(sources ${ARGN})
  list(REMOVE_DUPLICATES sources)  # the legacy build has every list's sources, some in more than one
  add_library(${target} OBJECT ${sources})
  # A CUDA source keeps its translation unit: its kernels' module is what DFLT-20 loads lazily.
  foreach(source IN LISTS sources)
    if(source MATCHES "\\.cu$")
      set_source_files_properties(${source} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
  target_link_libraries(${target} PRIVATE sc::fixtures sc::kernels GTest::gtest)
  target_compile_definitions(${target} PRIVATE SC_BUILD_VARIANT="${build}")
  sc_warnings(${target})
  if(build STREQUAL "ptds")
    target_compile_definitions(${target} PRIVATE CUDA_API_PER_THREAD_DEFAULT_STREAM=1)
  elseif(build STREQUAL "ptds_nvcc")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--default-stream=per-thread>)
  endif()
  set_property(GLOBAL APPEND PROPERTY SC_SUITE_OBJECTS_${build} ${target})
endfunction()

# A test executable of `build` from `sources` (or object libraries), with the test main.
function(_sc_test_executable exe build)
  set(names "${CMAKE_CURRENT_BINARY_DIR}/${exe}_build.cpp")
  file(GENERATE OUTPUT "${names}"
       CONTENT "namespace sc {\nextern const char* const kBuild = \"${build}\";\n}  // namespace sc\n")
  add_executable(${exe} ${ARGN} "${names}")
  target_link_libraries(${exe} PRIVATE sc::fixtures sc::kernels sc::main GTest::gtest)
  sc_warnings(${exe})
endfunction()

function(sc_behavior_family)
  cmake_parse_arguments(PARSE_ARGV 0 arg "NOGPU" "FAMILY;TIMEOUT"
                        "SOURCES;PER_THREAD_SOURCES;NVCC_PER_THREAD_SOURCES;ENV_VARIANT;ISOLATED;TWO_GPUS")
  get_filename_component(folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_SOURCES OR NOT arg_FAMILY STREQUAL folder)
    message(FATAL_ERROR "sc_behavior_family: FAMILY (the folder's name, here ${folder}) and SOURCES are required; "
                        "unknown: '${arg_UNPARSED_ARGUMENTS}'")
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
    _sc_test_executable(sc_${arg_FAMILY}_tests legacy ${arg_SOURCES})
    set_property(GLOBAL APPEND PROPERTY SC_EXECUTABLES
      "{\"name\": \"${arg_FAMILY}\", \"path\": \"$<TARGET_FILE:sc_${arg_FAMILY}_tests>\", \"build\": \"legacy\", \"kind\": \"nogpu\"}")
  else()
    _sc_family_objects(${arg_FAMILY} legacy ${arg_SOURCES} ${arg_PER_THREAD_SOURCES} ${arg_NVCC_PER_THREAD_SOURCES})
    if(arg_PER_THREAD_SOURCES)
      _sc_family_objects(${arg_FAMILY} ptds ${arg_PER_THREAD_SOURCES})
    endif()
    if(arg_NVCC_PER_THREAD_SOURCES)
      _sc_family_objects(${arg_FAMILY} ptds_nvcc ${arg_NVCC_PER_THREAD_SOURCES})
    endif()
  endif()

  set(variants "")
  set(remaining ${arg_ENV_VARIANT})
  while(remaining)
    list(POP_FRONT remaining name filter setting)
    list(APPEND variants "{\"name\": \"${name}\", \"filter\": \"${filter}\", \"sets\": \"${setting}\"}")
  endwhile()
  list(JOIN variants ", " variants)
  _sc_json_list(isolated ${arg_ISOLATED})
  _sc_json_list(two_gpus ${arg_TWO_GPUS})
  set_property(GLOBAL APPEND PROPERTY SC_FAMILIES
    "\"${arg_FAMILY}\": {\"kind\": \"${kind}\", \"timeout\": ${arg_TIMEOUT}, \"isolated\": ${isolated}, \"two_gpus\": ${two_gpus}, \"variants\": [${variants}]}")
endfunction()

# After every family: the suite's executables (one per build, every GPU family in each) and what ctest reads to
# make the entries (entries.py, through sc_entries.cmake in this folder).
function(sc_suite_executables)
  foreach(build legacy ptds ptds_nvcc)
    get_property(objects GLOBAL PROPERTY SC_SUITE_OBJECTS_${build})
    if(NOT objects)
      continue()
    endif()
    set(exe sc_suite)
    if(NOT build STREQUAL "legacy")
      set(exe sc_suite_${build})
    endif()
    _sc_test_executable(${exe} ${build})
    target_link_libraries(${exe} PRIVATE ${objects})
    set_property(GLOBAL APPEND PROPERTY SC_EXECUTABLES
      "{\"name\": \"suite\", \"path\": \"$<TARGET_FILE:${exe}>\", \"build\": \"${build}\", \"kind\": \"gpu\"}")
  endforeach()
  get_property(executables GLOBAL PROPERTY SC_EXECUTABLES)
  get_property(families GLOBAL PROPERTY SC_FAMILIES)
  list(JOIN executables ",\n    " executables)
  list(JOIN families ",\n    " families)
  set(config "${CMAKE_CURRENT_BINARY_DIR}/sc_entries.json")
  file(GENERATE OUTPUT "${config}" CONTENT "{\n  \"cmake\": \"${CMAKE_COMMAND}\",
  \"fail_script\": \"${PROJECT_SOURCE_DIR}/runner/cmake/fail.cmake\",
  \"results\": \"${SC_RESULTS}\",
  \"executables\": [\n    ${executables}\n  ],
  \"families\": {\n    ${families}\n  }\n}\n")
  set(script "${PROJECT_SOURCE_DIR}/runner/cmake/entries.py")
  file(GENERATE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/sc_entries.cmake" CONTENT "# Read by ctest: the entries of this build.
string(RANDOM LENGTH 8 _sc_tag)
set(_sc_out \"${CMAKE_CURRENT_BINARY_DIR}/sc_entries.\${_sc_tag}.cmake\")
execute_process(COMMAND [==[${Python3_EXECUTABLE}]==] [==[${script}]==] [==[${config}]==] \${_sc_out}
                RESULT_VARIABLE _sc_rc ERROR_VARIABLE _sc_error)
if(_sc_rc EQUAL 0)
  include(\${_sc_out})
else()
  string(REPLACE \";\" \",\" _sc_error \"entries.py failed (\${_sc_rc}): \${_sc_error}\")
  add_test(streamcheck.entries [==[${CMAKE_COMMAND}]==] \"-DSC_FAIL=\${_sc_error}\" -P [==[${PROJECT_SOURCE_DIR}/runner/cmake/fail.cmake]==])
endif()
file(REMOVE \${_sc_out})
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
               "${CMAKE_BINARY_DIR}/gpu_resource_spec.cmake" "${CMAKE_CURRENT_BINARY_DIR}/sc_entries.cmake")
endfunction()
