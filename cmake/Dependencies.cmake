# Third-party libraries, all from Debian bookworm packages (installed by scripts/deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED)
pkg_check_modules(HYPERSCAN REQUIRED IMPORTED_TARGET libhs)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
if(FAULTLINE_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(FAULTLINE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# faultline_module(NAME SOURCES... DEPS ...): one static library per module folder.
function(faultline_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${M_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${M_DEPS})
endfunction()

# faultline_test(NAME SOURCES... DEPS ...): a GoogleTest binary registered with ctest.
function(faultline_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    FAULTLINE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    FAULTLINE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ENVIRONMENT
    "FAULTLINE_SOURCE_DIR=${PROJECT_SOURCE_DIR};FAULTLINE_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()
