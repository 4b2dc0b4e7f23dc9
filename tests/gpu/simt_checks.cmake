# The device-primitives layer (src/device/simt) and the CUDA Prims (src/device/cuda/cuda_prims.h)
# under nvcc, included from CMakeLists.txt when CUDA is on. accl_simt_cuda_check compiles every
# kernel of tests/simt/simt_test_kernels.h (the ones the CPU harness runs in tests/simt) and ring
# all-reduce through CudaPrims for the project's CUDA architectures: part of `all`, so CI proves
# the PTX side compiles. accl_gpu_simt_tests (label gpu) runs them on a device and skips without
# one. Neither needs the library.
add_library(accl_simt_cuda_check OBJECT simt_kernels.cu cuda_prims_kernels.cu)
target_include_directories(accl_simt_cuda_check PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
                                                        ${PROJECT_SOURCE_DIR}/tests/simt ${CMAKE_CURRENT_SOURCE_DIR})
set_target_properties(accl_simt_cuda_check PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                                                      POSITION_INDEPENDENT_CODE ON)
target_compile_options(accl_simt_cuda_check PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>)

add_executable(accl_gpu_simt_tests simt_gpu_test.cc cuda_prims_gpu_test.cc $<TARGET_OBJECTS:accl_simt_cuda_check>)
target_include_directories(accl_gpu_simt_tests PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(accl_gpu_simt_tests PRIVATE CUDA::cudart_static GTest::gtest GTest::gtest_main)
gtest_discover_tests(accl_gpu_simt_tests PROPERTIES LABELS gpu TIMEOUT 300 DISCOVERY_TIMEOUT 60)
