# Build facts the environment file records (compilers, architectures, generator, configure command).
# Values that change per run (commit, driver, GPU) are read at run time by sc_env, not baked in here.
set(_sc_cache_args "")
get_cmake_property(_sc_vars CACHE_VARIABLES)
foreach(v IN LISTS _sc_vars)
  get_property(help CACHE "${v}" PROPERTY HELPSTRING)
  if(help MATCHES "No help, variable specified on the command line.")
    string(APPEND _sc_cache_args " -D${v}=${${v}}")
  endif()
endforeach()
set(SC_CONFIGURE_ARGS "${_sc_cache_args}")

# streamcheck_build.json: how this build was configured (read by sc_env into env.json "build").
function(_sc_json_string out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()
set(_sc_build "{}")
foreach(pair
    "cmake_version;${CMAKE_VERSION}" "generator;${CMAKE_GENERATOR}" "build_type;${CMAKE_BUILD_TYPE}"
    "cuda_architectures;${CMAKE_CUDA_ARCHITECTURES}" "cuda_compiler;${CMAKE_CUDA_COMPILER}"
    "cuda_compiler_version;${CMAKE_CUDA_COMPILER_VERSION}" "cxx_compiler;${CMAKE_CXX_COMPILER}"
    "cxx_compiler_version;${CMAKE_CXX_COMPILER_VERSION}" "cuda_toolkit_version;${CUDAToolkit_VERSION}"
    "source_dir;${CMAKE_SOURCE_DIR}" "binary_dir;${CMAKE_BINARY_DIR}" "configure_arguments;${SC_CONFIGURE_ARGS}")
  list(POP_FRONT pair key)
  string(JOIN ";" value ${pair})
  _sc_json_string(quoted "${value}")
  string(JSON _sc_build SET "${_sc_build}" "${key}" "${quoted}")
endforeach()
file(WRITE "${CMAKE_BINARY_DIR}/streamcheck_build.json" "${_sc_build}\n")
