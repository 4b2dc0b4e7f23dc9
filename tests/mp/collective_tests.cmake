# Collective correctness tests (the collective_* files): the matrix, the send/recv patterns and the
# bad-input cases (label mp, one binary), the nccl*Config tests (coll_config_test.cc, label mp), and
# the unit test of their expectation helpers (label unit, no library needed). Included from tests/mp/CMakeLists.txt after accl_add_mp_test.
set(ACCL_COLL_HELPERS collective_types.cc collective_expect.cc collective_cases.cc)

accl_add_mp_test(accl_mp_collective_tests ${ACCL_COLL_HELPERS} collective_call.cc collective_runner.cc
                 collective_matrix_test.cc collective_p2p_test.cc collective_bad_input_test.cc)
# The bad-input cases hand out-of-range datatypes and ops to the API the way a C caller can, so the
# test code that carries them holds enum values C++ calls invalid: UBSan's enum check is for the
# library (which reads them as integers), not for these three files.
if(ACCL_SANITIZE MATCHES "undefined")
  set_source_files_properties(collective_bad_input_test.cc collective_call.cc collective_runner.cc
                              PROPERTIES COMPILE_OPTIONS -fno-sanitize=enum)
endif()

# The nccl*Config collectives: per-call algorithm selection, channel bounds, profiler tag, errors.
accl_add_mp_test(accl_mp_coll_config_tests ${ACCL_COLL_HELPERS} collective_call.cc collective_runner.cc
                 coll_config_test.cc)

add_executable(accl_collective_expect_tests ${ACCL_COLL_HELPERS} collective_expect_test.cc)
target_include_directories(accl_collective_expect_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(accl_collective_expect_tests PRIVATE -Wall -Wextra)
target_link_libraries(accl_collective_expect_tests PRIVATE accl_test_support GTest::gtest GTest::gtest_main)
gtest_discover_tests(accl_collective_expect_tests PROPERTIES LABELS unit TIMEOUT 120 DISCOVERY_TIMEOUT 60)

# The network transport between virtual hosts (NCCL_HOSTID per forked rank, socket on loopback).
accl_add_mp_test(accl_mp_net_tests ${ACCL_COLL_HELPERS} collective_call.cc collective_runner.cc net_transport_test.cc)
