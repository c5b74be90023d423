# The .deb (CPack's DEB generator; scripts/package.sh runs it): everything the
# default install puts under /usr (the command, libgulpdb, the headers, the
# CMake and pkg-config files, the man page, the bash completion and the Python
# package for Debian's python3), with Depends computed by dpkg-shlibdeps from
# the native files plus what the Python package needs.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gulpdb)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(GULPDB_PACKAGE_MAINTAINER "gulpdb maintainers <gulpdb@invalid>" CACHE STRING
    "The Maintainer field of the .deb")
set(CPACK_PACKAGE_CONTACT "${GULPDB_PACKAGE_MAINTAINER}")

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # gulpdb_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION database)
# The long description; CPack puts the summary line above it and indents it.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "Frames stay as JPEG bytes in GulpIO-format .gulp chunk files, indexed by an
LMDB B+tree keyed by video id; appends are transactions and any number of
readers read consistent snapshots while one writer appends.

This package holds the gulpdb command, the C++ library libgulpdb with its
headers, CMake package and pkg-config file, and the Python package gulpdb
(NumPy arrays, PyTorch datasets, a GulpIO2-compatible API).")
# The native files' dependencies (libc, libstdc++, LMDB, TurboJPEG, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Maintainer scripts: byte-compile and clean the Python package; ldconfig
# runs through dpkg's trigger (CPack would write its own postinst for it,
# but not beside ours).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/cmake/debian/postinst
  ${PROJECT_SOURCE_DIR}/cmake/debian/prerm
  ${PROJECT_SOURCE_DIR}/cmake/debian/triggers)
if(BUILD_SHARED_LIBS)
  # shlibs: what a package built against libgulpdb.so.<major>.<minor> depends
  # on. (CPack's CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS would write the same,
  # and warn about the Python module, which has no soname.)
  set(soversion ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  file(WRITE ${PROJECT_BINARY_DIR}/debian/shlibs "libgulpdb ${soversion} gulpdb (>= ${PROJECT_VERSION})\n")
  list(APPEND CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/debian/shlibs)
endif()

set(GULPDB_DEB_DEPENDS "")
if(GULPDB_BUILD_PYTHON)
  # The extension module is built for one Python minor version.
  execute_process(
    COMMAND ${GULPDB_PYTHON_EXECUTABLE} -c "import sys; print('%d.%d' % sys.version_info[:2])"
    OUTPUT_VARIABLE python_version OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\2" python_minor "${python_version}")
  math(EXPR python_next_minor "${python_minor} + 1")
  string(REGEX REPLACE "\\.[0-9]+$" ".${python_next_minor}" python_next "${python_version}")
  set(GULPDB_DEB_DEPENDS "python3 (>= ${python_version}), python3 (<< ${python_next}), python3-numpy")
  set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, python3-distributed")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${GULPDB_DEB_DEPENDS}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ffmpeg")  # `gulpdb ingest` of videos runs it

include(CPack)
