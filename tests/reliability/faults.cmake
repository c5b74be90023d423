# Fault injection (fault_test.cc): full disks, failing, short and interrupted
# I/O, file size limits, read-only directories and file systems, chunk files
# cut short.
#
# reliability_faults runs anywhere. reliability_faults_privileged needs root
# (private mount namespaces, a tmpfs, a read-only bind mount, dropping to
# uid 65534); where that is not permitted it exits with 77 and CTest reports
# it as skipped. The long mode widens every sweep:
#   gulpdb_fault_tests -- --long     (or GULPDB_RELIABILITY_LONG=1)
add_executable(gulpdb_fault_tests fault_test.cc)
target_link_libraries(gulpdb_fault_tests PRIVATE
  gulpdb_policy gulpdb_reliability_common gulpdb_engine Boost::unit_test_framework)

add_test(NAME reliability_faults
         COMMAND gulpdb_fault_tests --run_test=fault_test/any_user --report_level=short)
set_tests_properties(reliability_faults PROPERTIES TIMEOUT 240 LABELS reliability)

add_test(NAME reliability_faults_privileged
         COMMAND gulpdb_fault_tests --run_test=fault_test/root --report_level=short)
set_tests_properties(reliability_faults_privileged PROPERTIES
  TIMEOUT 240 SKIP_RETURN_CODE 77 LABELS reliability)
