# `cmake --install build --prefix P`: headers under P/include/tapegrad/<layer>/ and the umbrella
# P/include/tapegrad/tapegrad.hpp, the static libraries, tapegradConfig.cmake with the exported targets
# (tapegrad::tapegrad and tapegrad::<layer>), and tapegrad.pc for pkg-config. Every installed path is
# relative to P, so the prefix can be moved (tests/package/run.sh installs, moves, then builds a project).
include(CMakePackageConfigHelpers)

set(tapegrad_layer_targets)
foreach(layer IN LISTS TAPEGRAD_LAYERS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tapegrad/${layer}
          FILES_MATCHING PATTERN "*.hpp")
  list(APPEND tapegrad_layer_targets tapegrad_${layer})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/tapegrad.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tapegrad)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(TARGETS ${tapegrad_layer_targets} tapegrad EXPORT tapegradTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

set(TAPEGRAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tapegrad)
install(EXPORT tapegradTargets NAMESPACE tapegrad:: DESTINATION ${TAPEGRAD_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tapegradConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tapegradConfig.cmake INSTALL_DESTINATION ${TAPEGRAD_CMAKE_DIR})
# 0.x: a minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tapegradConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tapegradConfig.cmake ${PROJECT_BINARY_DIR}/tapegradConfigVersion.cmake
        DESTINATION ${TAPEGRAD_CMAKE_DIR})

# pkg-config. The libraries are static, so Libs lists every layer from the top down, then OpenBLAS and oneDNN
# (as -lopenblas: its own .pc would put OpenBLAS's cblas.h on the include path, where it clashes with
# xtensor-blas's) and the thread library; Requires (not Requires.private, which plain --libs leaves
# out) brings fmt, libarchive and libcurl. No -std flag: it would override a user's newer standard
# (tapegrad needs C++17 or later, the default of GCC 11 and newer).
set(TAPEGRAD_PC_LIBS "")
foreach(layer datasets models train optim nn io autograd)
  if(NOT layer IN_LIST TAPEGRAD_LAYERS)
    message(FATAL_ERROR "cmake/install.cmake: the pkg-config link order names '${layer}', which is not a layer")
  endif()
  string(APPEND TAPEGRAD_PC_LIBS " -ltapegrad_${layer}")
endforeach()
if(TAPEGRAD_ONEDNN)
  set(TAPEGRAD_PC_DNNL " -ldnnl")
endif()
# distributed/ is left out: it needs MPI's compiler flags, which CMake's MPI::MPI_CXX carries and a .pc
# file cannot (link it with find_package).
set(pc_layers ${TAPEGRAD_LAYERS})
list(REMOVE_ITEM pc_layers distributed)
list(LENGTH pc_layers layer_count)
if(NOT layer_count EQUAL 7)
  message(FATAL_ERROR "cmake/install.cmake: add the new layer to the pkg-config link order (${TAPEGRAD_LAYERS})")
endif()
# The prefix as seen from the installed .pc file, so that the installed tree can move.
set(TAPEGRAD_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(TAPEGRAD_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH relative "/prefix/${TAPEGRAD_PC_DIR}" "/prefix")
  set(TAPEGRAD_PC_PREFIX "\${pcfiledir}/${relative}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/tapegrad.pc.in ${PROJECT_BINARY_DIR}/tapegrad.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tapegrad.pc DESTINATION ${TAPEGRAD_PC_DIR})
