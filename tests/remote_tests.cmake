# The remote client's suites (s3/ against s3rver and the S3 proxy), in
# their own binary: gulpdb_s3 does not depend on the engine, so neither
# do its tests, and they build and run (also under the sanitizers) without it.
# One suite per *_test.cc file, one CTest entry per suite, as for gulpdb_tests.
include(${PROJECT_SOURCE_DIR}/tests/harness/s3rver.cmake)

set(remote_test_sources
  remote_test_main.cc
  support/test_util.cc
  s3_client_test.cc
  s3_config_test.cc
  s3_faults_test.cc
  s3_server_test.cc
  s3_url_test.cc
  s3_xml_test.cc
)
add_executable(gulpdb_remote_tests ${remote_test_sources})
target_include_directories(gulpdb_remote_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR})
target_link_libraries(gulpdb_remote_tests PRIVATE
  gulpdb_policy gulpdb_s3 Boost::unit_test_framework Threads::Threads)
target_compile_definitions(gulpdb_remote_tests PRIVATE
  GULPDB_FIXTURES_DIR="${CMAKE_CURRENT_SOURCE_DIR}/fixtures")
gulpdb_use_s3_test_servers(gulpdb_remote_tests)

foreach(src ${remote_test_sources})
  if(src MATCHES "([a-z0-9_]+_test)\\.cc$")
    set(suite ${CMAKE_MATCH_1})
    add_test(NAME ${suite} COMMAND gulpdb_remote_tests --run_test=${suite} --report_level=short)
    set_tests_properties(${suite} PROPERTIES TIMEOUT 120 LABELS remote)
  endif()
endforeach()
