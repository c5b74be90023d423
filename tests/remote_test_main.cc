// The remote client's Boost.Test binary; suites live one per *_test.cc file.
#define BOOST_TEST_MODULE gulpdb_s3
#include <boost/test/unit_test.hpp>
