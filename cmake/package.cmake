# CPack: `cpack -G DEB` in a build folder makes a Debian package with the
# libraries, the headers, the CMake package and the pkg-config file (and
# cyclegc-replay when the benchmarks are built), installed under /usr.
set(CPACK_PACKAGE_NAME cyclegc)
set(CPACK_PACKAGE_VENDOR cyclegc)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
if(NOT CPACK_PACKAGE_CONTACT)  # the Maintainer field; -DCPACK_PACKAGE_CONTACT=... sets it
  set(CPACK_PACKAGE_CONTACT "cyclegc maintainers")
endif()
set(CPACK_RESOURCE_FILE_README ${PROJECT_SOURCE_DIR}/README.md)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# The run-time dependencies (libc, libstdc++, ...) from the binaries, when
# dpkg-shlibdeps (dpkg-dev) and file are there.
find_program(CYCLEGC_DPKG_SHLIBDEPS dpkg-shlibdeps)
find_program(CYCLEGC_FILE file)
if(CYCLEGC_DPKG_SHLIBDEPS AND CYCLEGC_FILE)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
