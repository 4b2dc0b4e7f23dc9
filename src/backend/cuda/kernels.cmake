# The CUDA backend's kernels (src/backend/cuda/kernels/*.cu) for the architectures of
# ACCL_KERNEL_ARCHS (cmake/CudaArchitectures.cmake; none: no_kernels.cc), included by the top-level
# CMakeLists.txt after accl_obj exists. Relocatable device code in a static library whose device
# link happens when the library is built (CUDA_RESOLVE_DEVICE_SYMBOLS): the kernel (kernel.cu)
# calls the work-item functions of 21 translation units (fn_group*.cu: seven type groups x three
# protocols, so that no unit takes minutes and every core works) through a device
# function table, and libnccl.so.2 / libnccl_static.a carry the linked sm_XX image.
#   ACCL_KERNEL_SUBSET=ON: only float32/bfloat16 sum (+ copy collectives), every algorithm and
#   protocol (dev_func.h); a call outside it fails with ncclInvalidUsage. OFF: the full set.
# The define reaches the host sources too (work_batch.cc checks ids against the same set).
if(ACCL_KERNEL_SUBSET)
  target_compile_definitions(accl_obj PUBLIC ACCL_KERNEL_SUBSET=1)
endif()
if(NOT ACCL_HAVE_CUDA)
  return()
endif()

if(NOT ACCL_KERNEL_ARCHS)
  # No architectures (cmake/CudaArchitectures.cmake): the entry points alone, no nvcc at all.
  add_library(accl_kernels STATIC ${CMAKE_CURRENT_LIST_DIR}/kernels/no_kernels.cc)
  target_include_directories(accl_kernels PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src
                                                  ${PROJECT_SOURCE_DIR})
  target_compile_definitions(accl_kernels PRIVATE ACCL_HAVE_CUDA=1)
  target_link_libraries(accl_kernels PUBLIC ${ACCL_CUDART})
  target_link_libraries(accl_obj PUBLIC accl_kernels)
  return()
endif()

file(GLOB ACCL_KERNEL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kernels/*.cu)
add_library(accl_kernels STATIC ${ACCL_KERNEL_SOURCES})
target_include_directories(accl_kernels PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src
                                                ${PROJECT_SOURCE_DIR})
set_target_properties(accl_kernels PROPERTIES CUDA_SEPARABLE_COMPILATION ON CUDA_RESOLVE_DEVICE_SYMBOLS ON
                                              POSITION_INDEPENDENT_CODE ON CUDA_STANDARD 17
                                              CUDA_STANDARD_REQUIRED ON CUDA_VISIBILITY_PRESET hidden)
# 512 threads per block allow 128 registers per thread; the table's functions are compiled
# separately and must fit the kernel's budget.
target_compile_options(accl_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-maxrregcount=128>)
target_compile_definitions(accl_kernels PRIVATE ACCL_HAVE_CUDA=1)
# kernel.cu alone names the architectures (acclKernelArchitectures), so that a change of the list
# recompiles nothing else.
string(REPLACE ";" " " _archs_text "${ACCL_KERNEL_ARCHS}")
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/kernels/kernel.cu PROPERTIES
                            COMPILE_DEFINITIONS "ACCL_KERNEL_ARCHS_TEXT=\"${_archs_text}\"")
if(ACCL_KERNEL_SUBSET)
  target_compile_definitions(accl_kernels PRIVATE ACCL_KERNEL_SUBSET=1)
endif()
target_link_libraries(accl_kernels PUBLIC ${ACCL_CUDART})  # ACCL_CUDA_RUNTIME (CMakeLists.txt)
target_link_libraries(accl_obj PUBLIC accl_kernels)

# ctest (label unit, CUDA builds): libnccl.so.2 carries device code for every architecture of
# ACCL_KERNEL_ARCHS (`cuobjdump --list-elf` lists an sm_XX ELF per architecture; without
# cuobjdump the script checks the fatbin section, see check_sm_code.cmake). A pip toolkit has no
# cuobjdump: scripts/fetch-cuobjdump.sh puts one under ~/.cache/accl/cuobjdump-cu<major>/bin.
if(ACCL_BUILD_TESTS)
  find_program(ACCL_CUOBJDUMP cuobjdump
               HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin "$ENV{ACCL_CUOBJDUMP_DIR}/bin"
                     "$ENV{HOME}/.cache/accl/cuobjdump-cu${CUDAToolkit_VERSION_MAJOR}/bin")
  if(NOT ACCL_CUOBJDUMP)
    set(ACCL_CUOBJDUMP "")
  endif()
  add_test(NAME accl_libnccl_has_sm_code
           COMMAND ${CMAKE_COMMAND} "-DCUOBJDUMP=${ACCL_CUOBJDUMP}" -DLIBRARY=$<TARGET_FILE:nccl>
                   "-DARCHS=${ACCL_KERNEL_ARCHS}" -P ${CMAKE_CURRENT_LIST_DIR}/check_sm_code.cmake)
  set_tests_properties(accl_libnccl_has_sm_code PROPERTIES LABELS unit TIMEOUT 120 SKIP_REGULAR_EXPRESSION "SKIPPED: ")
  # Issue 18's kernel gate (scripts/kernel-report.py --check, docs/kernel_report.md): sm_90 ring
  # all-reduce float sum has no local-memory access inside a loop and no connection metadata
  # loaded inside its step loops, and no more LDL+STL than NVIDIA's function per protocol.
  # Needs cuobjdump and nvdisasm (scripts/fetch-cuobjdump.sh) and NVIDIA's libnccl.so.2 from the
  # toolkit; skipped without them, or when sm_90 is not built.
  find_file(ACCL_NVIDIA_NCCL libnccl.so.2 HINTS ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR}
            /usr/local/cuda/lib /usr/local/cuda/lib64 NO_DEFAULT_PATH)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND AND ACCL_NVIDIA_NCCL AND "90" IN_LIST ACCL_KERNEL_ARCHS)
    add_test(NAME accl_kernel_report_check
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/kernel-report.py --accl $<TARGET_FILE:nccl>
                     --nccl ${ACCL_NVIDIA_NCCL} --arch sm_90 --no-ptxas --check --skip-without-tools)
    set_tests_properties(accl_kernel_report_check PROPERTIES LABELS unit TIMEOUT 300 SKIP_REGULAR_EXPRESSION "SKIPPED: ")
  endif()
endif()
