# Damaged index and chunk files (hostile.cc).
add_executable(gulpdb_hostile hostile.cc)
target_link_libraries(gulpdb_hostile PRIVATE gulpdb_reliability_common gulpdb_engine gulpdb_policy)
add_test(NAME reliability_hostile COMMAND gulpdb_hostile --trials 100 --seed 20261122)
set_tests_properties(reliability_hostile PROPERTIES TIMEOUT 300 LABELS reliability)
