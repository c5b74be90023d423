# Crash torture: a writer process SIGKILLed over and over at random moments
# and at chosen points of the commit protocol; a verifier process checks the
# dataset after every kill (see the header of torture.cc).
add_executable(gulpdb_torture torture.cc)
target_link_libraries(gulpdb_torture PRIVATE
  gulpdb_reliability_common gulpdb_engine gulpdb_policy)

# Quick mode: 40 kills, a few seconds in a Debug build. The long mode
# (gulpdb_torture --kills 500) runs from scripts/reliability.sh.
add_test(NAME reliability_torture COMMAND gulpdb_torture --kills 40)
set_tests_properties(reliability_torture PROPERTIES
  TIMEOUT 120
  LABELS reliability)
