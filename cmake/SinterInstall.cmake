# Install rules for libsinter: the shared library (with its SONAME symlinks), the public headers,
# a CMake package (Sinter::sinter) and a pkg-config file (sinter.pc, also used by the Rust binding's build.rs).
# Nothing else is installed: sinter_core is an implementation detail linked into libsinter.so.
include(CMakePackageConfigHelpers)

install(TARGETS sinter EXPORT SinterTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY "${SN_CAPI_INCLUDE_DIR}/sinter" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.h")
install(EXPORT SinterTargets NAMESPACE Sinter:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Sinter COMPONENT dev)

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/SinterConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/SinterConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Sinter)
# 0.x: a minor release may break the ABI (and bumps the SONAME when it does), so only the same minor matches.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/SinterConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/SinterConfig.cmake" "${PROJECT_BINARY_DIR}/SinterConfigVersion.cmake"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Sinter COMPONENT dev)

# The .pc file locates the prefix relative to itself (${pcfiledir}) so a staged or relocated install works.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _rel "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  set(SN_PC_PREFIX "\${pcfiledir}/${_rel}")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/sinter.pc.in" "${PROJECT_BINARY_DIR}/sinter.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/sinter.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
