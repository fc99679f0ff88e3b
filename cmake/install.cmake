# Install rules: headers, the two libraries, the CMake package (targets
# cyclegc::cyclegc, cyclegc::cyclegc_static, cyclegc::cxx, cyclegc::cxx_static)
# and the pkg-config file. Included by the top-level CMakeLists.txt when
# CYCLEGC_INSTALL is on.
include(CMakePackageConfigHelpers)

set(CYCLEGC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/cyclegc)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cyclegc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT development)
install(TARGETS cyclegc cyclegc_static cyclegc_cxx cyclegc_cxx_static EXPORT cyclegcTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT cyclegcTargets NAMESPACE cyclegc:: DESTINATION ${CYCLEGC_CMAKE_DIR}
        COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cyclegcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cyclegcConfig.cmake
  INSTALL_DESTINATION ${CYCLEGC_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cyclegcConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cyclegcConfig.cmake ${PROJECT_BINARY_DIR}/cyclegcConfigVersion.cmake
        DESTINATION ${CYCLEGC_CMAKE_DIR} COMPONENT development)

# The pkg-config file finds the prefix from its own place
# (<prefix>/<libdir>/pkgconfig), so that any `cmake --install --prefix` and
# a package unpacked anywhere (dpkg -x) work without editing it.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(CYCLEGC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(CYCLEGC_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  string(REGEX REPLACE "[^/]+" ".." up "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  set(CYCLEGC_PC_PREFIX "\${pcfiledir}/${up}")
  set(CYCLEGC_PC_LIBDIR "\${pcfiledir}/..")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(CYCLEGC_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(CYCLEGC_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/cyclegc.pc.in ${PROJECT_BINARY_DIR}/cyclegc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cyclegc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT development)
