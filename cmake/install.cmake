# What `cmake --install` puts where, and the .deb that CPack makes of it.
#
# Components (cmake --install --component NAME installs one):
#   runtime         the gulpdb command, libgulpdb.so.* (shared builds), the man
#                   page and the bash completion
#   development     include/gulpdb/*.h, libgulpdb.a or the libgulpdb.so link,
#                   gulpdbConfig.cmake (target gulpdb::gulpdb) and gulpdb.pc
#   python          the Python package, in GULPDB_INSTALL_PYTHONDIR
#                   (bindings/CMakeLists.txt)
#   python_command  the command again, inside the Python package (gulpdb/_bin):
#                   only the wheel asks for it (setup.py); a plain install and
#                   the .deb leave it out
#
# The command and the Python module link the parts' static libraries, not
# libgulpdb, so that each is whole on its own (the wheel carries no
# libgulpdb.so); libgulpdb is installed for other programs to link.

set(GULPDB_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gulpdb)
set(GULPDB_PKGCONFIG_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS gulpdb_library EXPORT gulpdbTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
          NAMELINK_COMPONENT development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gulpdb
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
  FILES_MATCHING PATTERN "*.h")

# How a consumer finds what libgulpdb links, one entry per dependency the
# parts have (cmake/library.cmake collects them). A shared libgulpdb keeps
# them to itself; a static one passes them on, so gulpdbConfig.cmake finds
# them (find_dependency) and gulpdb.pc lists them for `pkg-config --static`.
set(GULPDB_CONFIG_DEPENDENCIES "")
set(GULPDB_PC_REQUIRES_PRIVATE "")
set(GULPDB_PC_LIBS_PRIVATE "")
foreach(dep ${GULPDB_LIBRARY_DEPENDENCIES})
  if(dep STREQUAL "Threads::Threads")
    string(APPEND GULPDB_CONFIG_DEPENDENCIES "find_dependency(Threads)\n")
    list(APPEND GULPDB_PC_LIBS_PRIVATE -pthread)
  elseif(dep MATCHES "^flatbuffers::")
    # Debian's libflatbuffers-dev has a CMake package but no .pc file.
    string(APPEND GULPDB_CONFIG_DEPENDENCIES "find_dependency(FlatBuffers CONFIG)\n")
    list(APPEND GULPDB_PC_LIBS_PRIVATE -lflatbuffers)
  elseif(dep STREQUAL "CURL::libcurl")
    string(APPEND GULPDB_CONFIG_DEPENDENCIES "find_dependency(CURL)\n")
    # The shared libcurl, also under `pkg-config --static`: Requires.private
    # would pull libcurl's own static closure (nghttp2, ssh2, ldap, ...), whose
    # static libraries Debian's libcurl4-openssl-dev does not bring.
    list(APPEND GULPDB_PC_LIBS_PRIVATE -lcurl)
  elseif(dep STREQUAL "EXPAT::EXPAT")
    string(APPEND GULPDB_CONFIG_DEPENDENCIES "find_dependency(EXPAT)\n")
    list(APPEND GULPDB_PC_REQUIRES_PRIVATE expat)
  elseif(dep STREQUAL "simdjson::simdjson")
    string(APPEND GULPDB_CONFIG_DEPENDENCIES "find_dependency(simdjson CONFIG)\n")
    list(APPEND GULPDB_PC_REQUIRES_PRIVATE simdjson)
  elseif(dep STREQUAL "OpenSSL::Crypto")
    string(APPEND GULPDB_CONFIG_DEPENDENCIES "find_dependency(OpenSSL COMPONENTS Crypto)\n")
    list(APPEND GULPDB_PC_REQUIRES_PRIVATE libcrypto)
  elseif(dep MATCHES "^PkgConfig::(.+)$")
    # pkg_check_modules(<prefix> IMPORTED_TARGET <module>) made it; the
    # consumer makes the same target the same way.
    set(prefix ${CMAKE_MATCH_1})
    set(module ${${prefix}_MODULE_NAME})
    if(NOT module)
      # pkg_check_modules of several modules sets no _MODULE_NAME: the
      # caller lists them in <prefix>_MODULES (LIBAV, CMakeLists.txt).
      set(module ${${prefix}_MODULES})
    endif()
    if(NOT module)
      message(FATAL_ERROR "install.cmake: no pkg-config module name for ${dep}")
    endif()
    string(APPEND GULPDB_CONFIG_DEPENDENCIES "gulpdb_find_pkg_config(${prefix} \"${module}\")\n")
    list(APPEND GULPDB_PC_REQUIRES_PRIVATE ${module})
  else()
    message(FATAL_ERROR "install.cmake: libgulpdb links ${dep}; say here how its consumers "
                        "find it (gulpdbConfig.cmake) and link it (gulpdb.pc)")
  endif()
endforeach()
set(GULPDB_CONFIG_LIBRARY_KIND static)
if(BUILD_SHARED_LIBS)
  set(GULPDB_CONFIG_LIBRARY_KIND shared)
  set(GULPDB_CONFIG_DEPENDENCIES "")
  set(GULPDB_PC_REQUIRES_PRIVATE "")
  set(GULPDB_PC_LIBS_PRIVATE "")
endif()
# gulpdb.pc's lines for `pkg-config --static`.
set(GULPDB_PC_PRIVATE "")
if(GULPDB_PC_REQUIRES_PRIVATE)
  string(REPLACE ";" ", " requires "${GULPDB_PC_REQUIRES_PRIVATE}")
  string(APPEND GULPDB_PC_PRIVATE "Requires.private: ${requires}\n")
endif()
if(GULPDB_PC_LIBS_PRIVATE)
  string(REPLACE ";" " " libs "${GULPDB_PC_LIBS_PRIVATE}")
  string(APPEND GULPDB_PC_PRIVATE "Libs.private: ${libs}\n")
endif()

# CMake package: find_package(gulpdb CONFIG) then link gulpdb::gulpdb.
include(CMakePackageConfigHelpers)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gulpdbConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gulpdbConfig.cmake
  INSTALL_DESTINATION ${GULPDB_CMAKE_INSTALL_DIR})
# 0.x: a minor version may break the API, so only the same minor version is
# compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gulpdbConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(EXPORT gulpdbTargets NAMESPACE gulpdb::
  DESTINATION ${GULPDB_CMAKE_INSTALL_DIR} COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/gulpdbConfig.cmake ${PROJECT_BINARY_DIR}/gulpdbConfigVersion.cmake
  DESTINATION ${GULPDB_CMAKE_INSTALL_DIR} COMPONENT development)

# pkg-config: gulpdb.pc names the prefix it is installed under, which is
# known only at install time (`cmake --install --prefix`, CPack's /usr), so
# the file is configured twice: everything but the prefix now, the prefix by
# the install step itself.
set(GULPDB_PC_PREFIX "@GULPDB_PC_PREFIX@")  # kept for the install step
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(GULPDB_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(GULPDB_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(GULPDB_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(GULPDB_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/gulpdb.pc.in ${PROJECT_BINARY_DIR}/gulpdb.pc.prefix-later
  @ONLY)
install(CODE "
  get_filename_component(GULPDB_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
  configure_file(\"${PROJECT_BINARY_DIR}/gulpdb.pc.prefix-later\" \"${PROJECT_BINARY_DIR}/gulpdb.pc\"
                 @ONLY)"
  COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/gulpdb.pc
  DESTINATION ${GULPDB_PKGCONFIG_INSTALL_DIR} COMPONENT development)

# The command's install rules are in cli/CMakeLists.txt, the Python
# package's in bindings/CMakeLists.txt. Its man page and bash completion are
# made from its own --help output when it is built.
set(docs_dir ${PROJECT_BINARY_DIR}/share)
add_custom_command(OUTPUT ${docs_dir}/bash-completion/gulpdb
  COMMAND ${CMAKE_COMMAND} -DGULPDB=$<TARGET_FILE:gulpdb>
          -DOUTPUT=${docs_dir}/bash-completion/gulpdb
          -P ${PROJECT_SOURCE_DIR}/cmake/completion.cmake
  DEPENDS gulpdb ${PROJECT_SOURCE_DIR}/cmake/completion.cmake
  COMMENT "Generating the bash completion of gulpdb from its --help"
  VERBATIM)
set(docs_outputs ${docs_dir}/bash-completion/gulpdb)
install(FILES ${docs_dir}/bash-completion/gulpdb
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT runtime)

find_program(GULPDB_HELP2MAN help2man)
if(GULPDB_HELP2MAN)
  add_custom_command(OUTPUT ${docs_dir}/man/gulpdb.1.gz
    COMMAND ${CMAKE_COMMAND} -DGULPDB=$<TARGET_FILE:gulpdb> -DHELP2MAN=${GULPDB_HELP2MAN}
            -DOUTPUT=${docs_dir}/man/gulpdb.1.gz
            -P ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
    DEPENDS gulpdb ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
    COMMENT "Generating the gulpdb man page from its --help (help2man)"
    VERBATIM)
  list(APPEND docs_outputs ${docs_dir}/man/gulpdb.1.gz)
  install(FILES ${docs_dir}/man/gulpdb.1.gz
    DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
else()
  message(STATUS "help2man not found: no man page (scripts/setup.sh installs it)")
endif()
add_custom_target(gulpdb_docs ALL DEPENDS ${docs_outputs})

# Shared builds: the command's sources linked against libgulpdb.so instead of
# the parts, which checks that the library exports all the public API they
# use (a declaration in include/gulpdb without GULPDB_EXPORT fails to link
# here). The floor (gulpdb_util) and the viewer (gulpdb_view), which the
# command may use and the library does not export, are linked as the command
# links them. Not built by default; the packaging test (tests/package) builds and
# runs it.
if(BUILD_SHARED_LIBS)
  get_target_property(cli_sources gulpdb SOURCES)
  get_target_property(cli_dir gulpdb SOURCE_DIR)
  list(TRANSFORM cli_sources PREPEND ${cli_dir}/)
  add_executable(gulpdb_export_check EXCLUDE_FROM_ALL ${cli_sources})
  get_target_property(cli_includes gulpdb INCLUDE_DIRECTORIES)
  get_target_property(cli_definitions gulpdb COMPILE_DEFINITIONS)
  target_include_directories(gulpdb_export_check PRIVATE ${cli_includes})
  target_compile_definitions(gulpdb_export_check PRIVATE ${cli_definitions})
  target_link_libraries(gulpdb_export_check PRIVATE
    gulpdb_policy gulpdb_view gulpdb_util gulpdb_library Boost::program_options)
  # The same for the Python module's objects: linked to libgulpdb.so, with
  # Python's own symbols left for the interpreter, any gulpdb:: symbol still
  # undefined (`ldd -r`) is public API the library does not export.
  if(TARGET _gulpdb)
    add_library(gulpdb_module_export_check MODULE EXCLUDE_FROM_ALL $<TARGET_OBJECTS:_gulpdb>)
    set_target_properties(gulpdb_module_export_check PROPERTIES LINKER_LANGUAGE CXX PREFIX "")
    target_link_libraries(gulpdb_module_export_check PRIVATE gulpdb_view gulpdb_util gulpdb_library
                          Threads::Threads)
  endif()
endif()

# The licence and what the binaries hold from other projects, as Debian's
# machine-readable copyright file: /usr/share/doc/gulpdb/copyright in the .deb
# (Debian policy's place; the licence text is /usr/share/common-licenses'),
# share/doc/gulpdb/ in any other install.
install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/copyright
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

include(${PROJECT_SOURCE_DIR}/cmake/deb.cmake)
