// Text inside XML and HTML: the one escape of the five characters markup
// gives a meaning to, for S3's request bodies (s3/s3_xml.cc) and the
// viewer's pages and charts (view/). It does not check or repair UTF-8; a
// caller whose text may not be UTF-8 makes it so first.
//
// Thread safety: pure functions.
#ifndef GULPDB_UTIL_MARKUP_H_
#define GULPDB_UTIL_MARKUP_H_

#include <string>
#include <string_view>

namespace gulpdb::util {

// `text` with & < > " ' as &amp; &lt; &gt; &quot; &#39; (valid in XML and
// HTML, in text and in attribute values alike).
std::string EscapeMarkup(std::string_view text);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_MARKUP_H_
