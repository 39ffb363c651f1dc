# `cmake --install build --prefix P`: headers under P/include/tapegrad/<layer>/, the libraries,
# tapegradConfig.cmake with the exported targets (tapegrad::tapegrad and one per layer), and
# tapegrad.pc for pkg-config.
include(CMakePackageConfigHelpers)

foreach(layer IN LISTS TAPEGRAD_LAYERS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tapegrad/${layer}
          FILES_MATCHING PATTERN "*.hpp")
  list(APPEND tapegrad_layer_targets tapegrad_${layer})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/tapegrad.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tapegrad)
install(TARGETS ${tapegrad_layer_targets} tapegrad EXPORT tapegradTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(TAPEGRAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tapegrad)
install(EXPORT tapegradTargets NAMESPACE tapegrad:: DESTINATION ${TAPEGRAD_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tapegradConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tapegradConfig.cmake INSTALL_DESTINATION ${TAPEGRAD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tapegradConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tapegradConfig.cmake ${PROJECT_BINARY_DIR}/tapegradConfigVersion.cmake
        DESTINATION ${TAPEGRAD_CMAKE_DIR})

# pkg-config: the layers from the top down (static libraries), then what they link.
set(TAPEGRAD_PC_LIBS "")
foreach(layer datasets models train optim nn io autograd)
  string(APPEND TAPEGRAD_PC_LIBS " -ltapegrad_${layer}")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/tapegrad.pc.in ${PROJECT_BINARY_DIR}/tapegrad.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tapegrad.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
