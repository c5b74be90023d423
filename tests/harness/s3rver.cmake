# The S3 test servers (tests/harness/s3_server.cc: s3rver and s3_proxy.py)
# for the remote client's tests and benchmark.
#
# s3rver comes from scripts/setup.sh (npm, into build/tools); a missing one
# fails the tests with "run scripts/setup.sh".
set(GULPDB_S3RVER "${PROJECT_SOURCE_DIR}/build/tools/s3rver/node_modules/.bin/s3rver"
    CACHE FILEPATH "The s3rver program the remote client's tests and benchmark run")

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

# Compiles the server helpers into `target`.
function(gulpdb_use_s3_test_servers target)
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests/harness/s3_server.cc)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PRIVATE CURL::libcurl)
  target_compile_definitions(${target} PRIVATE
    GULPDB_S3RVER="${GULPDB_S3RVER}"
    GULPDB_S3RVER_NODE_OPTIONS="${GULPDB_S3RVER_NODE_OPTIONS}"
    GULPDB_S3_PROXY="${PROJECT_SOURCE_DIR}/tests/harness/s3_proxy.py"
    GULPDB_PYTHON="/usr/bin/python3")
endfunction()
