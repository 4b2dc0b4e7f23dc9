# What `cmake --install` puts under the prefix: libnccl.so* and libnccl_static.a, nccl.h, the tools
# (their install rules sit next to them: tools/CMakeLists.txt, bench/CMakeLists.txt), accl-perf's
# nccl-tests names (all_reduce_perf ...), pkg-config files (nccl.pc, nccl_static.pc) and the CMake
# packages NCCL (NCCL::nccl, NCCL::nccl_static) and accl (accl::nccl, accl::nccl_static).
# Every installed file finds the others relative to itself, so `--prefix` may change at install time.
# Included at the end of the top-level CMakeLists.txt, after every target exists.
include(CMakePackageConfigHelpers)

install(TARGETS nccl nccl_static LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/nccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Installed programs that link libnccl.so.2 load the one installed beside them (RUNPATH, so
# LD_LIBRARY_PATH still overrides it), never another NCCL found on the system path.
file(RELATIVE_PATH _accl_bin_to_lib /accl/${CMAKE_INSTALL_BINDIR} /accl/${CMAKE_INSTALL_LIBDIR})
foreach(tool accl-perf accl-comm-demo)
  if(TARGET ${tool})
    set_property(TARGET ${tool} PROPERTY INSTALL_RPATH "$ORIGIN/${_accl_bin_to_lib}")
  endif()
endforeach()

# nccl-tests' program names: the symlinks bench/CMakeLists.txt makes beside accl-perf in the build
# tree (accl-perf picks the collective from argv[0]), copied as symlinks.
if(TARGET accl-perf)
  install(DIRECTORY ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/ DESTINATION ${CMAKE_INSTALL_BINDIR}
          FILES_MATCHING PATTERN "*_perf")
endif()

# What a static link of libnccl_static.a needs after it: the C++ runtime, threads, dl, rt, hwloc
# (when the build uses it) and CUDA's static runtime (CUDA builds).
set(ACCL_STATIC_LIBS_PC "")
set(ACCL_STATIC_LIBS_CMAKE "")
if(HWLOC_FOUND)
  string(JOIN " " _hwloc_ldflags ${HWLOC_LDFLAGS})
  string(APPEND ACCL_STATIC_LIBS_PC " ${_hwloc_ldflags}")
  list(APPEND ACCL_STATIC_LIBS_CMAKE ${HWLOC_LINK_LIBRARIES})
endif()
if(TARGET accl_kernels)
  # The CUDA kernels: a static library of their own (device-linked when it is built, see
  # src/backend/cuda/kernels.cmake), installed beside libnccl_static.a and linked after it.
  install(TARGETS accl_kernels ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  string(APPEND ACCL_STATIC_LIBS_PC " -laccl_kernels")
  list(APPEND ACCL_STATIC_LIBS_CMAKE "\${_accl_nccl_libdir}/libaccl_kernels.a")
endif()
if(ACCL_HAVE_CUDA AND ACCL_CUDA_RUNTIME STREQUAL "shared")
  string(APPEND ACCL_STATIC_LIBS_PC " -L${CUDAToolkit_LIBRARY_DIR} -lcudart")
  list(APPEND ACCL_STATIC_LIBS_CMAKE "${CUDAToolkit_LIBRARY_DIR}/libcudart.so")
elseif(ACCL_HAVE_CUDA)
  string(APPEND ACCL_STATIC_LIBS_PC " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static")
  list(APPEND ACCL_STATIC_LIBS_CMAKE "${CUDAToolkit_LIBRARY_DIR}/libcudart_static.a")
endif()
string(APPEND ACCL_STATIC_LIBS_PC " -lstdc++ -lm -lpthread -ldl -lrt")
list(APPEND ACCL_STATIC_LIBS_CMAKE stdc++ m Threads::Threads ${CMAKE_DL_LIBS} rt)

# pkg-config: prefix relative to the .pc file (pkg-config's ${pcfiledir}).
set(_accl_pcdir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH ACCL_PC_TO_PREFIX /accl/${_accl_pcdir} /accl)
string(REGEX REPLACE "/$" "" ACCL_PC_TO_PREFIX "${ACCL_PC_TO_PREFIX}")
foreach(pc nccl nccl_static)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${_accl_pcdir})
endforeach()

# CMake packages: find_package(NCCL) and find_package(accl), NCCL 2.x compatible versions.
foreach(pkg NCCL accl)
  set(_dir ${CMAKE_INSTALL_LIBDIR}/cmake/${pkg})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/${pkg}Config.cmake.in
                                ${PROJECT_BINARY_DIR}/cmake-package/${pkg}Config.cmake
                                INSTALL_DESTINATION ${_dir}
                                PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake-package/${pkg}ConfigVersion.cmake
                                   VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/cmake-package/${pkg}Config.cmake
                ${PROJECT_BINARY_DIR}/cmake-package/${pkg}ConfigVersion.cmake DESTINATION ${_dir})
endforeach()
