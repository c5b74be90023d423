# libgulpdb: the one library that is installed and that consumers link
# (gulpdb::gulpdb). It is made of the objects of the library parts, the
# static libraries gulpdb_index, gulpdb_engine, gulpdb_ingest, ...: each part
# keeps its own target, compile setup and layering (gulpdb_layer_includes),
# and the programs built in this tree (the command, the Python module, tests,
# benchmarks) keep linking the parts. The parts' objects are compiled once and
# archived (static) or linked (shared, BUILD_SHARED_LIBS) again into
# libgulpdb, whose dependencies are the parts' third-party ones: private in a
# shared library, link-only in a static one.
#
# Symbol visibility: the parts compile with hidden visibility, so libgulpdb.so
# exports only what include/gulpdb marks GULPDB_EXPORT (gulpdb/export.h).

# gulpdb_library(part...): defines the target gulpdb_library (libgulpdb,
# exported as gulpdb::gulpdb) from the given part targets, and
# GULPDB_LIBRARY_DEPENDENCIES (its third-party link dependencies, which
# gulpdbConfig.cmake and gulpdb.pc must know how to find).
function(gulpdb_library)
  add_library(gulpdb_library)
  add_library(gulpdb::gulpdb ALIAS gulpdb_library)
  set(dependencies)
  foreach(part ${ARGN})
    get_target_property(type ${part} TYPE)
    if(NOT type STREQUAL "STATIC_LIBRARY" AND NOT type STREQUAL "OBJECT_LIBRARY")
      message(FATAL_ERROR "gulpdb_library: ${part} is a ${type}; a part is a STATIC or OBJECT library")
    endif()
    set_target_properties(${part} PROPERTIES
      CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
    target_sources(gulpdb_library PRIVATE $<TARGET_OBJECTS:${part}>)
    add_dependencies(gulpdb_library ${part})
    # Everything a part links that is not one of ours (gulpdb_*: the parts,
    # the compile policy, the header-only API) is a dependency of the library.
    get_target_property(libs ${part} LINK_LIBRARIES)
    foreach(lib ${libs})
      if(NOT lib MATCHES "^gulpdb_" AND NOT lib IN_LIST dependencies)
        list(APPEND dependencies ${lib})
      endif()
    endforeach()
  endforeach()
  # Private: nothing of them is in the public headers. (A static libgulpdb
  # still lists them, link-only, for its consumers' link.)
  target_link_libraries(gulpdb_library PRIVATE ${dependencies})
  target_include_directories(gulpdb_library PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(gulpdb_library PUBLIC cxx_std_17)
  set_target_properties(gulpdb_library PROPERTIES
    OUTPUT_NAME gulpdb
    EXPORT_NAME gulpdb
    LINKER_LANGUAGE CXX
    VERSION ${PROJECT_VERSION}
    # 0.x: no ABI promise between minor versions.
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
  if(BUILD_SHARED_LIBS AND NOT GULPDB_SANITIZE)
    # Every symbol the library needs resolves at link time, not in a consumer.
    target_link_options(gulpdb_library PRIVATE -Wl,--no-undefined)
  endif()
  set(GULPDB_LIBRARY_DEPENDENCIES ${dependencies} PARENT_SCOPE)
endfunction()
