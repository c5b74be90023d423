// libav's logging, routed away from stderr, and libav error text.
//
// InitLibav (called by every entry point of the room before it calls libav)
// installs, once per process, a log callback that prints nothing and keeps
// the last message of level error or worse on the calling thread, so that a
// failure can say what libav complained of (LastLibavMessage) without
// libav's messages spamming stderr. The callback is process-wide: a program
// that also uses libav for itself (PyAV in the same Python process) and sets
// its own callback afterwards wins, which changes only what goes to stderr.
//
// Thread safety: all functions may be called from any thread.
#ifndef GULPDB_ENGINE_VIDEO_LIBAV_SUPPORT_H_
#define GULPDB_ENGINE_VIDEO_LIBAV_SUPPORT_H_

#include <string>

namespace gulpdb::video {

void InitLibav();

// The last error message libav logged on this thread since the last call to
// ClearLibavMessage ("" if none), without its trailing newline.
std::string LastLibavMessage();
void ClearLibavMessage();

// av_strerror's text for `errnum`, followed by "(libav: <last message>)" when
// libav logged one.
std::string DescribeLibavError(int errnum);

}  // namespace gulpdb::video

#endif  // GULPDB_ENGINE_VIDEO_LIBAV_SUPPORT_H_
