// _time_reads: the read loop of bench/python_read_bench.py run entirely in
// C++, the baseline that tells the cost of the Python layer from the cost of
// the reads themselves. Not part of the public API.
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bindings/src/bindings.h"

namespace gulpdb::python {
namespace {

// Reads clip i = frames [starts[i], starts[i] + length) of ids[i] for every i,
// decoded with `colorspace`/`dct`, on `threads` threads that each take every
// threads-th clip (as the Python benchmark splits them). Returns the elapsed
// seconds and the number of bytes decoded.
py::tuple TimeReads(const DatasetHandle& h, const std::vector<std::string>& ids,
                    const std::vector<int64_t>& starts, int64_t length, size_t threads,
                    const std::string& colorspace, const std::string& dct) {
  if (ids.size() != starts.size()) throw py::value_error("ids and starts differ in length");
  if (threads == 0) throw py::value_error("threads must be positive");
  auto ds = h.Get();
  const DecodeOptions options = ToDecodeOptions(colorspace, dct, 1, false);
  std::vector<uint64_t> bytes(threads, 0);
  double seconds = 0;
  {
    py::gil_scoped_release release;
    const auto t0 = std::chrono::steady_clock::now();
    ParallelFor(threads, threads, [&](size_t t) {
      for (size_t i = t; i < ids.size(); i += threads) {
        const DecodedFrames frames =
            ds->ReadFrames(ids[i], Selection::Slice(starts[i], starts[i] + length), options);
        bytes[t] += frames.byte_size();
      }
    });
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;
  return py::make_tuple(seconds, total);
}

}  // namespace

void BindBench(py::module_& m) {
  m.def("_time_reads", &TimeReads, py::arg("dataset"), py::arg("ids"), py::arg("starts"),
        py::arg("length"), py::arg("threads") = 1, py::arg("colorspace") = "rgb",
        py::arg("dct") = "fast",
        "Benchmark helper: times ReadFrames of clips [start, start + length) in a C++ loop "
        "on `threads` threads; returns (seconds, bytes decoded).");
}

}  // namespace gulpdb::python
