# Which GPU architectures the CUDA kernels are compiled for (ACCL_CUDA_ARCHITECTURES), resolved to
# ACCL_KERNEL_ARCHS: a CMake list of architectures, or empty for a build without kernels.
#   auto (the default)  the architectures of the GPUs this machine can see; none without a GPU
#   90, 80;90, ...      those (CMAKE_CUDA_ARCHITECTURES syntax: 90-real, 90-virtual, ...)
#   all-major, all      CMake's sets: every major (or every) architecture the toolkit knows
#   none                no kernels
# The kernels are most of a cold build: the full set for sm_90 costs minutes of nvcc and ptxas per
# core, and every further architecture as much again (README, "Build time"). A machine without a
# GPU has nothing to run them on, so `auto` builds none there: the library keeps its CUDA backend's
# host side and says at communicator init, on a GPU, that it has no kernels and how to get them.
# The virtual GPU (vgpu/) needs kernels too (a launch goes through nvcc's registration):
# scripts/test.sh asks for sm_90, the architecture it presents, when no GPU is visible.
#
# The GPUs are asked for with the toolkit's own device query (what CMake's "native" runs, which
# fails the configure without a GPU), then nvidia-smi; each capability "9.0" becomes "90".

function(accl_visible_cuda_architectures out)
  set(archs "")
  get_filename_component(_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  find_program(ACCL_NVCC_DEVICE_QUERY __nvcc_device_query HINTS "${_bin}" NO_DEFAULT_PATH)
  if(ACCL_NVCC_DEVICE_QUERY)
    # Prints each device's architecture as a number ("90"), or fails without a driver or device.
    execute_process(COMMAND "${ACCL_NVCC_DEVICE_QUERY}" RESULT_VARIABLE rc OUTPUT_VARIABLE text
                    ERROR_QUIET TIMEOUT 30)
    if(rc EQUAL 0)
      string(REGEX MATCHALL "[0-9]+" archs "${text}")
    endif()
  endif()
  if(NOT archs)
    find_program(ACCL_NVIDIA_SMI nvidia-smi)
    if(ACCL_NVIDIA_SMI)
      execute_process(COMMAND "${ACCL_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                      RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_QUIET TIMEOUT 30)
      if(rc EQUAL 0)
        string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${text}")
        foreach(cap IN LISTS caps)
          string(REPLACE "." "" arch "${cap}")
          list(APPEND archs ${arch})
        endforeach()
      endif()
    endif()
  endif()
  list(REMOVE_DUPLICATES archs)
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

function(accl_resolve_cuda_architectures out)
  set(want "${ACCL_CUDA_ARCHITECTURES}")
  if(want STREQUAL "auto")
    accl_visible_cuda_architectures(archs)
    if(archs)
      message(STATUS "accl: CUDA kernels for the visible GPUs: ${archs}")
    else()
      message(STATUS "accl: no GPU visible: CUDA backend without kernels "
                     "(-DACCL_CUDA_ARCHITECTURES=90, or your GPUs' architectures, to build them)")
    endif()
  elseif(want STREQUAL "none" OR want STREQUAL "")
    set(archs "")
    message(STATUS "accl: CUDA backend without kernels (ACCL_CUDA_ARCHITECTURES=${want})")
  else()
    set(archs "${want}")
    message(STATUS "accl: CUDA kernels for: ${archs}")
  endif()
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()
