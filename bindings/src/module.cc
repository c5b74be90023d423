// The `gulpdb._gulpdb` extension module. The public Python API is the
// `gulpdb` package around it (bindings/python/gulpdb); this module is its
// native half and is documented in _gulpdb.pyi.
#include "bindings/src/bindings.h"

PYBIND11_MODULE(_gulpdb, m) {
  namespace python = gulpdb::python;
  m.doc() = "Native half of the gulpdb package (see gulpdb/_gulpdb.pyi).";
  m.attr("__version__") = GULPDB_VERSION;
  // The engine's cap on the threads of one read, batch or encode.
  m.attr("MAX_THREADS") = gulpdb::kMaxThreads;
  m.def("writer_defaults", &python::WriterDefaults,
        "The engine's writer defaults, by NativeDataset.writer's argument names.");
  {
    pybind11::list codecs;
    for (const gulpdb::Codec codec : {gulpdb::Codec::kJpeg, gulpdb::Codec::kH264}) {
      if (gulpdb::CodecSupported(codec)) codecs.append(gulpdb::CodecName(codec));
    }
    m.attr("codecs") = pybind11::tuple(codecs);
  }
  python::RegisterErrors(m);
  python::BindDecodeOptions(m);
  python::BindDataset(m);
  python::BindWriter(m);
  python::BindQuery(m);
  python::BindVersions(m);
  python::BindCodec(m);
  python::BindInterop(m);
  python::BindRemote(m);
  python::BindIngest(m);
  python::BindView(m);
}
