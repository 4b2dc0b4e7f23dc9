# CPack: `cpack -G DEB` (in the build folder) makes accl_<version>_<arch>.deb. Everything goes under
# /opt/accl (lib/libnccl.so.2, lib/libnccl_static.a, include/nccl.h, bin/ tools and *_perf names,
# lib/pkgconfig, lib/cmake), so nothing collides with NVIDIA's libnccl2 / libnccl-dev. The library is
# chosen through the library path:
#   - /etc/ld.so.conf.d/00-accl.conf (a conffile) lists /opt/accl/lib ahead of the multiarch folder,
#     so ldconfig resolves libnccl.so.2 to accl's system-wide while the package is installed;
#   - an admin who wants NVIDIA's to stay the default comments that line out (dpkg keeps the edit)
#     and runs ldconfig; a job then picks accl with LD_LIBRARY_PATH=/opt/accl/lib.
# Provides: libnccl2 (= version), so packages that depend on NVIDIA's runtime accept accl; no
# Conflicts/Replaces: the two packages share no file and may be installed side by side.
# Included at the end of the top-level CMakeLists.txt, after every install rule.
# Another prefix must stay out of the folders NVIDIA's packages own (/usr): there would be file conflicts.
set(ACCL_PACKAGE_PREFIX /opt/accl CACHE PATH "Where `cpack -G DEB` installs accl")

# The ld.so.conf.d entry: a component of its own, left out of a plain `cmake --install` (which must
# not write /etc) and put into the package by CPack.
set(_accl_ldconf ${PROJECT_BINARY_DIR}/cpack/00-accl.conf)
file(CONFIGURE OUTPUT ${_accl_ldconf}
     CONTENT "# accl's libnccl.so.2 ahead of other NCCLs; comment out + ldconfig to make it opt-in (LD_LIBRARY_PATH)\n${ACCL_PACKAGE_PREFIX}/${CMAKE_INSTALL_LIBDIR}\n")
install(FILES ${_accl_ldconf} DESTINATION /etc/ld.so.conf.d COMPONENT ldconfig EXCLUDE_FROM_ALL)
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/cpack/conffiles CONTENT "/etc/ld.so.conf.d/00-accl.conf\n")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/cpack/triggers CONTENT "activate-noawait ldconfig\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME accl)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR accl)
if(NOT CPACK_PACKAGE_CONTACT)
  set(CPACK_PACKAGE_CONTACT "accl developers <accl@localhost>")
endif()
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "drop-in replacement for NVIDIA's NCCL (libnccl.so.2) with a host backend")
set(CPACK_PACKAGE_DESCRIPTION "accl implements NCCL ${PROJECT_VERSION}'s C API and ABI from scratch: programs built
against NVIDIA's NCCL run on it unchanged. It also runs without a GPU (host backend).
Installs under ${ACCL_PACKAGE_PREFIX}; /etc/ld.so.conf.d/00-accl.conf puts its libnccl.so.2
ahead of NVIDIA's libnccl2 on the library path.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${ACCL_PACKAGE_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
get_cmake_property(CPACK_COMPONENTS_ALL COMPONENTS)
list(APPEND CPACK_COMPONENTS_ALL ldconfig)
list(REMOVE_DUPLICATES CPACK_COMPONENTS_ALL)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
find_program(ACCL_DPKG_SHLIBDEPS dpkg-shlibdeps)  # Depends from the binaries (dpkg-dev); else a fixed list
if(ACCL_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libgcc-s1, libstdc++6")
  if(HWLOC_FOUND)
    string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libhwloc15")
  endif()
endif()
set(CPACK_DEBIAN_PACKAGE_PROVIDES "libnccl2 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/cpack/conffiles ${PROJECT_BINARY_DIR}/cpack/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)  # as NVIDIA ships it; the build tree keeps the debug info
include(CPack)
