# Third-party libraries, all from Debian bookworm packages (installed by scripts/deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED)
# libhs: Debian's Vectorscan (libvectorscan-dev; the multi-arch fork of Hyperscan, same hs.h
# API, x86-64 and arm64 alike).
pkg_check_modules(HYPERSCAN REQUIRED IMPORTED_TARGET libhs)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
if(FAULTLINE_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(FAULTLINE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# Developer convenience while several people add modules at once: with
# -DFAULTLINE_SKIP_INCOMPLETE=ON a module or test whose listed sources do not all exist yet
# is skipped with a warning instead of failing the configure step. Off by default (CI).
option(FAULTLINE_SKIP_INCOMPLETE "Skip targets whose source files are missing (development only)" OFF)
function(faultline_sources_missing out)
  set(missing FALSE)
  if(FAULTLINE_SKIP_INCOMPLETE)
    foreach(src IN LISTS ARGN)
      if(NOT IS_ABSOLUTE ${src})
        set(src ${CMAKE_CURRENT_SOURCE_DIR}/${src})
      endif()
      if(NOT EXISTS ${src})
        set(missing TRUE)
      endif()
    endforeach()
  endif()
  set(${out} ${missing} PARENT_SCOPE)
endfunction()

# faultline_module(NAME SOURCES... DEPS ...): one library per module folder (static unless
# FAULTLINE_SHARED_MODULES).
function(faultline_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  faultline_sources_missing(missing ${M_SOURCES})
  if(missing OR (FAULTLINE_SKIP_INCOMPLETE AND NOT M_SOURCES))
    message(WARNING "skipping ${name}: sources missing")
    return()
  endif()
  if(FAULTLINE_SHARED_MODULES)
    add_library(${name} SHARED ${M_SOURCES})
  else()
    add_library(${name} STATIC ${M_SOURCES})
  endif()
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${M_DEPS})
endfunction()

# Every ctest test fails after this many seconds instead of stalling CI on a hang. The
# slowest single tests run simulated scenarios with the agent (LockstepTest.SkippingIdle*:
# four runs, 20 s in RelWithDebInfo on the loaded 2-core dev machine); a Debug ASan+UBSan
# build is several times slower, and qemu-user (scripts/cross-arm64.sh) more: 600 s keeps
# headroom for both while a real hang still fails within ten minutes.
set(FAULTLINE_TEST_TIMEOUT 600 CACHE STRING "Per-test ctest timeout in seconds")

# faultline_test(NAME SOURCES... DEPS ...): a GoogleTest binary registered with ctest;
# each of its tests gets FAULTLINE_TEST_TIMEOUT.
function(faultline_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS" ${ARGN})
  faultline_sources_missing(missing ${T_SOURCES})
  if(missing OR (FAULTLINE_SKIP_INCOMPLETE AND NOT T_SOURCES))
    message(WARNING "skipping ${name}: sources missing")
    return()
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    FAULTLINE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    FAULTLINE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT ${FAULTLINE_TEST_TIMEOUT} ENVIRONMENT
    "FAULTLINE_SOURCE_DIR=${PROJECT_SOURCE_DIR};FAULTLINE_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()
