// The single Boost.Test binary; suites live one per *_test.cc file.
#define BOOST_TEST_MODULE gulpdb
#include <boost/test/unit_test.hpp>
