# GoogleTest, nlohmann/json: through their CMake packages.
#
# GoogleTest: the installed package first (Debian libgtest-dev, the GPU runners' distribution package).
# Without it, FetchContent builds it from source. Offline machines point FetchContent at a local tree
# (a checkout, or Debian's "googletest" sources), so nothing is downloaded:
#   -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/usr/src/googletest
find_package(GTest 1.12 QUIET)
if(NOT TARGET GTest::gtest)
  include(FetchContent)
  if(FETCHCONTENT_SOURCE_DIR_GOOGLETEST AND NOT EXISTS "${FETCHCONTENT_SOURCE_DIR_GOOGLETEST}/CMakeLists.txt")
    message(FATAL_ERROR "FETCHCONTENT_SOURCE_DIR_GOOGLETEST=${FETCHCONTENT_SOURCE_DIR_GOOGLETEST} holds no CMakeLists.txt")
  endif()
  if(FETCHCONTENT_SOURCE_DIR_GOOGLETEST)
    set(_sc_gtest_from "${FETCHCONTENT_SOURCE_DIR_GOOGLETEST}")
  else()
    set(_sc_gtest_from "a download of release 1.12.1")
  endif()
  message(STATUS "streamcheck: no installed GoogleTest; building it with FetchContent from ${_sc_gtest_from}")
  set(CMAKE_POLICY_VERSION_MINIMUM 3.5)  # CMake 4 refuses old policy floors in vendored trees
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  FetchContent_Declare(googletest
    URL https://github.com/google/googletest/archive/refs/tags/release-1.12.1.tar.gz
    URL_HASH SHA256=81964fe578e9bd7c94dfdb09c8e4d6e6759e19967e397dbea48d1c10e45d0df2)
  FetchContent_MakeAvailable(googletest)
  if(NOT TARGET GTest::gtest AND TARGET gtest)
    add_library(GTest::gtest ALIAS gtest)
  endif()
endif()
if(NOT TARGET GTest::gtest)
  message(FATAL_ERROR "streamcheck: GoogleTest was neither found nor built")
endif()
include(GoogleTest)

find_package(nlohmann_json 3.9 QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  message(FATAL_ERROR
    "streamcheck: nlohmann/json (CMake package nlohmann_json >= 3.9) was not found.\n"
    "Debian/Ubuntu: apt-get install nlohmann-json3-dev; elsewhere pass -Dnlohmann_json_DIR=<dir with "
    "nlohmann_jsonConfig.cmake>.")
endif()
