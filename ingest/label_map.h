// The label map of an ingest: label -> index, as GulpIO's adapters keep it in
// <dataset>/label2idx.json. Labels already in the file keep their index; new
// labels are sorted and numbered after the largest index, so that extending
// a dataset never renumbers it. The file is replaced atomically (file layer),
// keeping its existing entries in their order. Reading a damaged file throws
// CorruptionError naming it.
#ifndef GULPDB_INGEST_LABEL_MAP_H_
#define GULPDB_INGEST_LABEL_MAP_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/label_map.h"
#include "gulpdb/ingest.h"

namespace gulpdb::ingest {

// label2idx.json's entries in file order (read and written by the engine's
// label_map, which merge uses too).
using LabelEntries = engine::LabelEntries;

// `existing` plus the labels of `sources` it lacks, sorted, numbered after
// its largest index (in that order: the file order of label2idx.json).
LabelEntries ExtendLabels(LabelEntries existing, const std::vector<SourceSpec>& sources);

// Throws InvalidArgumentError naming the first label of `sources` that
// `map` lacks.
void CheckLabelsMapped(const std::string& dir, const LabelMap& map,
                       const std::vector<SourceSpec>& sources);

// Makes <dir>/label2idx.json hold `map`: entries already there keep their
// place (their index must agree with `map`, else InvalidArgumentError before
// anything is written), the others follow in index order. Rewrites the file
// only when it changes.
void UpdateLabel2Idx(const std::string& dir, const LabelMap& map);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_LABEL_MAP_H_
