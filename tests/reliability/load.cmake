# The load test (load.cc): one writer, reader processes and threads and a
# .gmeta exporter on one dataset. CTest runs the quick mode; the long mode is
# `gulpdb_load --videos 10000` (scripts/reliability.sh).
add_executable(gulpdb_load ${CMAKE_CURRENT_SOURCE_DIR}/load.cc)
target_link_libraries(gulpdb_load PRIVATE gulpdb_reliability_common gulpdb_engine gulpdb_policy)

add_test(NAME reliability_load COMMAND gulpdb_load --videos 1500 --seed 1)
set_tests_properties(reliability_load PROPERTIES
  TIMEOUT 240
  LABELS reliability)
