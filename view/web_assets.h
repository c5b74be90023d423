// The page's files (view/web/), compiled into the program by
// view/embed_web.cmake, so that the installed command serves the page with
// nothing else on disk. Thread safety: immutable data.
#ifndef GULPDB_VIEW_WEB_ASSETS_H_
#define GULPDB_VIEW_WEB_ASSETS_H_

#include <string_view>

namespace gulpdb::view {

struct WebAsset {
  std::string_view path;  // as requested: "/index.html", "/app.js", ...
  std::string_view content_type;
  std::string_view bytes;
};

// The file served at `path`, or null when there is none: a path is looked up
// in this table, never joined to a directory.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_WEB_ASSETS_H_
