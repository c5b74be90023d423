# The remote client's suites (remote/ against s3rver and the S3 proxy), in
# their own binary: gulpdb_remote does not depend on the engine, so neither
# do its tests, and they build and run (also under the sanitizers) without it.
# One suite per *_test.cc file, one CTest entry per suite, as for gulpdb_tests.
#
# s3rver comes from scripts/setup.sh (npm, into build/tools); a missing one
# fails the tests with "run scripts/setup.sh".
set(GULPDB_S3RVER "${PROJECT_SOURCE_DIR}/build/tools/s3rver/node_modules/.bin/s3rver"
    CACHE FILEPATH "The s3rver program the remote client's tests run")

# s3rver 3.7.1 makes ListObjectsV2 continuation tokens with DES, which the
# OpenSSL 3 of Node.js >= 17 keeps in its legacy provider: without
# --openssl-legacy-provider every paginated listing fails with HTTP 500.
set(GULPDB_S3RVER_NODE_OPTIONS "")
find_program(GULPDB_NODE node)
if(GULPDB_NODE)
  execute_process(COMMAND ${GULPDB_NODE} --version OUTPUT_VARIABLE node_version
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(node_version MATCHES "^v([0-9]+)\\." AND CMAKE_MATCH_1 GREATER_EQUAL 17)
    set(GULPDB_S3RVER_NODE_OPTIONS "--openssl-legacy-provider")
  endif()
endif()

set(remote_test_sources
  remote_test_main.cc
  support/s3_server.cc
  support/test_util.cc
  s3_client_test.cc
  s3_config_test.cc
  s3_faults_test.cc
  s3_url_test.cc
  s3_xml_test.cc
)
add_executable(gulpdb_remote_tests ${remote_test_sources})
target_include_directories(gulpdb_remote_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR})
target_link_libraries(gulpdb_remote_tests PRIVATE
  gulpdb_policy gulpdb_remote Boost::unit_test_framework CURL::libcurl Threads::Threads)
target_compile_definitions(gulpdb_remote_tests PRIVATE
  GULPDB_S3RVER="${GULPDB_S3RVER}"
  GULPDB_S3_PROXY="${CMAKE_CURRENT_SOURCE_DIR}/support/s3_proxy.py"
  GULPDB_PYTHON="/usr/bin/python3"
  GULPDB_S3RVER_NODE_OPTIONS="${GULPDB_S3RVER_NODE_OPTIONS}"
  GULPDB_FIXTURES_DIR="${CMAKE_CURRENT_SOURCE_DIR}/fixtures")

foreach(src ${remote_test_sources})
  if(src MATCHES "([a-z0-9_]+_test)\\.cc$")
    set(suite ${CMAKE_MATCH_1})
    add_test(NAME ${suite} COMMAND gulpdb_remote_tests --run_test=${suite} --report_level=short)
    set_tests_properties(${suite} PROPERTIES TIMEOUT 120 LABELS remote)
  endif()
endforeach()
