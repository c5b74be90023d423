// The file names `gulpdb extract` gives frames: <stem>_<frame>.jpg, where the
// stem is the id itself when the id is a safe file name, and otherwise the id
// made safe plus a hash of the id, so that distinct ids never share a file
// name and no id can name a path outside the output folder.
//
// The rule (also in `gulpdb extract --help` and docs/cli.md):
//   - An id is kept as the stem when it has only ASCII letters, digits, '.',
//     '_' and '-', does not start with '.', has at most 200 bytes, and does
//     not end in '-' followed by 8 hex digits (the form of a hashed stem).
//   - Any other id gets the stem <safe>-<hash>: <safe> is the id with each
//     other character (a whole UTF-8 character, or a leading '.') replaced by
//     '_', cut to 200 bytes; <hash> is the first 8 hex digits of the 64-bit
//     FNV-1a hash of the id's bytes. "a/b" becomes "a_b-<hash>", "é" "_-<hash>".
//   - <frame> is the frame index, at least 5 digits ("00012").
// Two ids with the same stem would need equal hashes of different ids; the
// extract command refuses to overwrite an existing file, so even that cannot
// lose a frame silently. Thread-safe (pure functions).
#ifndef GULPDB_CLI_FRAME_NAMES_H_
#define GULPDB_CLI_FRAME_NAMES_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gulpdb::cli {

// The 64-bit FNV-1a hash of `bytes` (offset basis 14695981039346656037,
// prime 1099511628211).
uint64_t Fnv1a64(std::string_view bytes);

// The stem of the frame files of `id` (see above).
std::string FrameFileStem(std::string_view id);

// "<stem>_<frame, 5 digits or more>.jpg"
std::string FrameFileName(const std::string& stem, uint32_t frame);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_FRAME_NAMES_H_
