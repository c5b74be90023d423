#include "engine/video/libav_support.h"

#include <cstdarg>
#include <cstring>
#include <mutex>
#include <string>

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
}

namespace gulpdb::video {
namespace {

thread_local std::string last_message;

void Callback(void* avcl, int level, const char* fmt, va_list vl) {
  if (level > AV_LOG_ERROR) return;
  char line[1024];
  int print_prefix = 1;
  av_log_format_line2(avcl, level, fmt, vl, line, sizeof(line), &print_prefix);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!text.empty()) last_message = text;
}

}  // namespace

void InitLibav() {
  static std::once_flag once;
  std::call_once(once, [] {
    av_log_set_level(AV_LOG_ERROR);
    av_log_set_callback(&Callback);
  });
}

std::string LastLibavMessage() { return last_message; }
void ClearLibavMessage() { last_message.clear(); }

std::string DescribeLibavError(int errnum) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(errnum, text, sizeof(text));
  std::string out(text);
  if (!last_message.empty()) out += " (libav: " + last_message + ")";
  return out;
}

}  // namespace gulpdb::video
