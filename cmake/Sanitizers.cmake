# Sanitizer and fuzzing build options, applied to every target of the build (library, tests, tools,
# bench) so that instrumented code never calls uninstrumented copies of itself.
#
#   -DACCL_SANITIZE=address,undefined   AddressSanitizer + UndefinedBehaviorSanitizer (any UB report
#                                       aborts the process, so a finding fails its test)
#   -DACCL_SANITIZE=thread              ThreadSanitizer
#   -DACCL_FUZZ=ON                      libFuzzer targets in tests/fuzz (needs clang; the library is
#                                       built with -fsanitize=fuzzer-no-link so coverage guides them).
#                                       With gcc the same targets build against a standalone driver
#                                       (tests/fuzz/standalone_main.cc) that replays a corpus and
#                                       random inputs.
# Runtime options and suppressions: cmake/sanitizers/*.supp, used by scripts/sanitize.sh.
set(ACCL_SANITIZE "" CACHE STRING "Sanitizers: empty, address,undefined (or a subset) or thread")
option(ACCL_FUZZ "Build the fuzz targets in tests/fuzz (libFuzzer with clang)" OFF)

set(ACCL_SANITIZE_FLAGS "")
if(ACCL_SANITIZE)
  if(ACCL_SANITIZE MATCHES "thread" AND ACCL_SANITIZE MATCHES "address")
    message(FATAL_ERROR "ACCL_SANITIZE: thread cannot be combined with address")
  endif()
  list(APPEND ACCL_SANITIZE_FLAGS -fsanitize=${ACCL_SANITIZE} -fno-omit-frame-pointer)
  if(ACCL_SANITIZE MATCHES "undefined")
    list(APPEND ACCL_SANITIZE_FLAGS -fno-sanitize-recover=all)
  endif()
  message(STATUS "accl: sanitizers ${ACCL_SANITIZE}")
endif()

set(ACCL_FUZZ_LIBFUZZER OFF)
if(ACCL_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(ACCL_FUZZ_LIBFUZZER ON)
  # Coverage instrumentation for everything; only the fuzz targets link libFuzzer's main.
  list(APPEND ACCL_SANITIZE_FLAGS -fsanitize=fuzzer-no-link)
  message(STATUS "accl: fuzz targets with libFuzzer")
elseif(ACCL_FUZZ)
  message(STATUS "accl: fuzz targets with the standalone driver (${CMAKE_CXX_COMPILER_ID} has no libFuzzer)")
endif()

if(ACCL_SANITIZE_FLAGS)
  # C and C++ only: nvcc does not take these flags (CUDA device code is not sanitized).
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${ACCL_SANITIZE_FLAGS}>")
  add_link_options(${ACCL_SANITIZE_FLAGS})
endif()
