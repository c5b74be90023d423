// The XML of S3's responses and of the one request body that needs it
// (CompleteMultipartUpload). Internal to s3/.
//
// Parsing is expat's (libexpat1-dev): a small streaming C parser that builds
// no tree, has limits against entity expansion, and is a dependency of half
// of Debian already; libxml2 would bring a DOM, XPath and network features we
// do not want to expose to a server's responses, and pugixml is DOM-only and
// not otherwise installed. Documents with a DOCTYPE are refused outright.
// s3_xml.cc is the only file that includes <expat.h>.
//
// Every parser returns false and sets `*error` (a short description) when
// the document is malformed or lacks a required element; none throws.
//
// Thread safety: pure functions.
#ifndef GULPDB_S3_S3_XML_H_
#define GULPDB_S3_S3_XML_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "s3/s3_types.h"

namespace gulpdb::remote::xml {

// One element of a document, reported when it ends: its path of local names
// from the root ("ListBucketResult/Contents/Key") and the text directly inside it.
struct Element {
  std::string path;
  std::string text;
};
bool ParseElements(std::string_view xml, std::vector<Element>* out, std::string* error);

// An <Error> document. Returns false if `xml` is not one.
struct ErrorBody {
  std::string code;
  std::string message;
  std::string request_id;
  std::string endpoint;  // PermanentRedirect: where the bucket lives
  std::string region;    // some stores name the bucket's region
};
bool ParseError(std::string_view xml, ErrorBody* out);

// One page of ListObjectsV2. Keys are decoded when the response says
// <EncodingType>url</EncodingType>.
struct ListPage {
  std::vector<ListedObject> objects;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_continuation_token;
};
bool ParseListObjectsV2(std::string_view xml, ListPage* out, std::string* error);

// InitiateMultipartUploadResult: the upload id.
bool ParseInitiateMultipartUpload(std::string_view xml, std::string* upload_id, std::string* error);

// CompleteMultipartUploadResult: the ETag of the new object. A 200 response
// may carry an <Error> instead (S3 reports failures of a long-running
// completion that way): then this returns false with `*error` naming its code,
// and `*error_body` is filled.
bool ParseCompleteMultipartUpload(std::string_view xml, std::string* etag, ErrorBody* error_body,
                                  std::string* error);

// The CompleteMultipartUpload request body for parts 1..n with these ETags.
std::string CompleteMultipartUploadBody(const std::vector<std::string>& part_etags);

}  // namespace gulpdb::remote::xml

#endif  // GULPDB_S3_S3_XML_H_
