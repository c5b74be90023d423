// Metadata queries and named splits on _gulpdb.NativeDataset (gulpdb/query.h):
// select (by conditions) and select_query (the query language), the meta
// index calls and the split listings. The Python layer
// (python/gulpdb/_dataset.py) turns Python values into the JSON texts that
// select takes. The writer's set_split / remove_split are bound with the
// rest of NativeWriter (dataset_binding.cc).
#include <pybind11/stl.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "bindings/src/bindings.h"
#include "gulpdb/dataset.h"
#include "gulpdb/query.h"

namespace gulpdb::python {
namespace {

std::chrono::milliseconds LockTimeout(double seconds) {
  if (!(seconds >= 0)) throw py::value_error("lock_timeout must be >= 0");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

void BindQuery(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<DatasetHandle>>(m.attr("NativeDataset"));
  cls.def(
         "select",
         [](const DatasetHandle& h,
            const std::vector<std::pair<std::string, std::vector<std::string>>>& terms) {
           auto ds = h.Get();
           std::vector<MetaCondition> conditions;
           conditions.reserve(terms.size());
           for (const auto& [key, values] : terms) conditions.push_back(MetaCondition{key, values});
           std::vector<std::string> ids;
           {
             py::gil_scoped_release release;
             ids = ds->Select(conditions);
           }
           return ids;
         },
         py::arg("conditions"),
         "Ids whose first meta entry satisfies every (key, [json values]) condition (one of "
         "the values each), in (chunk, insertion) order.")
      .def(
          "select_query",
          [](const DatasetHandle& h, const std::string& expression) {
            auto ds = h.Get();
            std::vector<std::string> ids, keys;
            {
              py::gil_scoped_release release;
              const Query query = Query::Parse(expression);
              keys = query.MetaKeys();
              ids = ds->Select(query);
            }
            return std::make_pair(std::move(ids), std::move(keys));
          },
          py::arg("expression"),
          "(ids that satisfy the query, in (chunk, insertion) order; the meta keys it names). "
          "ValueError, with a caret under the byte, for text that is not a query.")
      .def(
          "meta_index_details",
          [](const DatasetHandle& h) {
            auto ds = h.Get();
            std::vector<MetaIndexInfo> details;
            {
              py::gil_scoped_release release;
              details = ds->MetaIndexDetails();
            }
            std::vector<std::pair<std::string, bool>> out;
            for (MetaIndexInfo& d : details) out.emplace_back(std::move(d.key), d.ordered);
            return out;
          },
          "(key, ordered) of every meta index: ordered is False for an index of the first key "
          "form (equality only until rebuilt).")
      .def(
          "create_meta_index",
          [](const DatasetHandle& h, const std::string& key, double lock_timeout) {
            auto ds = h.Get();
            const std::chrono::milliseconds timeout = LockTimeout(lock_timeout);
            py::gil_scoped_release release;
            return ds->CreateMetaIndex(key, timeout);
          },
          py::arg("key"), py::arg("lock_timeout") = 0.0,
          "Builds a meta index of `key`; False if it has one already.")
      .def(
          "drop_meta_index",
          [](const DatasetHandle& h, const std::string& key, double lock_timeout) {
            auto ds = h.Get();
            const std::chrono::milliseconds timeout = LockTimeout(lock_timeout);
            py::gil_scoped_release release;
            return ds->DropMetaIndex(key, timeout);
          },
          py::arg("key"), py::arg("lock_timeout") = 0.0,
          "Drops the meta index of `key`; False if it had none.")
      .def(
          "meta_indexes",
          [](const DatasetHandle& h) {
            auto ds = h.Get();
            py::gil_scoped_release release;
            return ds->MetaIndexes();
          },
          "The keys with a meta index.")
      .def(
          "absent_meta_keys",
          [](const DatasetHandle& h, const std::vector<std::string>& keys) {
            auto ds = h.Get();
            py::gil_scoped_release release;
            return ds->AbsentMetaKeys(keys);
          },
          py::arg("keys"), "The keys among `keys` that no video's first meta entry has.")
      .def(
          "splits",
          [](const DatasetHandle& h) {
            auto ds = h.Get();
            std::vector<SplitInfo> splits;
            {
              py::gil_scoped_release release;
              splits = ds->Splits();
            }
            std::vector<std::pair<std::string, uint64_t>> out;
            for (SplitInfo& s : splits) out.emplace_back(std::move(s.name), s.count);
            return out;
          },
          "(name, count) of every split, by name.")
      .def(
          "split",
          [](const DatasetHandle& h, const std::string& name) {
            auto ds = h.Get();
            std::vector<std::string> ids;
            {
              py::gil_scoped_release release;
              ids = ds->Split(name);
            }
            return ids;
          },
          py::arg("name"), "The ids of a split in split order; KeyError naming the known ones.");
}

}  // namespace gulpdb::python
