#include "s3/s3_xml.h"

#include <expat.h>

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "s3/s3_url.h"
#include "util/markup.h"

namespace gulpdb::remote::xml {
namespace {

constexpr size_t kMaxDepth = 32;

struct Collector {
  XML_Parser parser = nullptr;
  std::vector<Element>* out = nullptr;
  std::vector<std::string> names;  // the open elements
  std::vector<std::string> texts;  // their direct text so far
  std::string error;
};

std::string LocalName(const XML_Char* name) {
  std::string s(name);
  const size_t colon = s.rfind(':');
  return colon == std::string::npos ? s : s.substr(colon + 1);
}

void XMLCALL OnStart(void* data, const XML_Char* name, const XML_Char** /*attributes*/) {
  auto* c = static_cast<Collector*>(data);
  if (c->names.size() >= kMaxDepth) {
    c->error = "elements nested deeper than " + std::to_string(kMaxDepth);
    XML_StopParser(c->parser, XML_FALSE);
    return;
  }
  c->names.push_back(LocalName(name));
  c->texts.emplace_back();
}

void XMLCALL OnEnd(void* data, const XML_Char* /*name*/) {
  auto* c = static_cast<Collector*>(data);
  Element e;
  for (size_t i = 0; i < c->names.size(); ++i) {
    if (i > 0) e.path.push_back('/');
    e.path += c->names[i];
  }
  e.text = std::move(c->texts.back());
  c->names.pop_back();
  c->texts.pop_back();
  c->out->push_back(std::move(e));
}

void XMLCALL OnText(void* data, const XML_Char* s, int len) {
  auto* c = static_cast<Collector*>(data);
  if (!c->texts.empty() && len > 0) c->texts.back().append(s, static_cast<size_t>(len));
}

void XMLCALL OnDoctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  auto* c = static_cast<Collector*>(data);
  c->error = "a DOCTYPE declaration (refused)";
  XML_StopParser(c->parser, XML_FALSE);
}

bool ParseUnsigned(const std::string& text, uint64_t* value) {
  if (text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  errno = 0;
  *value = std::strtoull(text.c_str(), nullptr, 10);
  return errno == 0;
}

}  // namespace

bool ParseElements(std::string_view xml, std::vector<Element>* out, std::string* error) {
  out->clear();
  if (xml.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    *error = "document too large";
    return false;
  }
  Collector c;
  c.out = out;
  c.parser = XML_ParserCreate("UTF-8");
  if (c.parser == nullptr) {
    *error = "out of memory creating the XML parser";
    return false;
  }
  XML_SetUserData(c.parser, &c);
  XML_SetElementHandler(c.parser, OnStart, OnEnd);
  XML_SetCharacterDataHandler(c.parser, OnText);
  XML_SetStartDoctypeDeclHandler(c.parser, OnDoctype);
  const XML_Status status = XML_Parse(c.parser, xml.data(), static_cast<int>(xml.size()), XML_TRUE);
  bool ok = status == XML_STATUS_OK && c.error.empty();
  if (!ok) {
    if (c.error.empty()) {
      c.error = std::string(XML_ErrorString(XML_GetErrorCode(c.parser))) + " at line " +
                std::to_string(XML_GetCurrentLineNumber(c.parser));
    }
    *error = "malformed XML: " + c.error;
  }
  XML_ParserFree(c.parser);
  return ok;
}

bool ParseError(std::string_view xml, ErrorBody* out) {
  std::vector<Element> elements;
  std::string error;
  if (!ParseElements(xml, &elements, &error) || elements.empty() ||
      elements.back().path != "Error") {
    return false;
  }
  *out = ErrorBody();
  for (const Element& e : elements) {
    if (e.path == "Error/Code") out->code = e.text;
    if (e.path == "Error/Message") out->message = e.text;
    if (e.path == "Error/RequestId") out->request_id = e.text;
    if (e.path == "Error/Endpoint") out->endpoint = e.text;
    if (e.path == "Error/Region") out->region = e.text;
  }
  return !out->code.empty();
}

bool ParseListObjectsV2(std::string_view xml, ListPage* out, std::string* error) {
  std::vector<Element> elements;
  if (!ParseElements(xml, &elements, error)) return false;
  if (elements.empty() || elements.back().path != "ListBucketResult") {
    *error = "not a ListBucketResult document";
    return false;
  }
  *out = ListPage();
  bool url_encoded = false;
  bool have_truncated = false;
  ListedObject current;
  bool have_key = false;
  bool have_size = false;
  std::string prefix;
  for (const Element& e : elements) {
    const std::string& p = e.path;
    if (p == "ListBucketResult/IsTruncated") {
      if (e.text != "true" && e.text != "false") {
        *error = "IsTruncated is '" + e.text + "'";
        return false;
      }
      out->truncated = e.text == "true";
      have_truncated = true;
    } else if (p == "ListBucketResult/NextContinuationToken") {
      out->next_continuation_token = e.text;
    } else if (p == "ListBucketResult/EncodingType") {
      url_encoded = e.text == "url";
    } else if (p == "ListBucketResult/Contents/Key") {
      current.key = e.text;
      have_key = true;
    } else if (p == "ListBucketResult/Contents/Size") {
      if (!ParseUnsigned(e.text, &current.info.size)) {
        *error = "Size is '" + e.text + "'";
        return false;
      }
      have_size = true;
    } else if (p == "ListBucketResult/Contents/ETag") {
      current.info.etag = e.text;
    } else if (p == "ListBucketResult/Contents/LastModified") {
      current.info.last_modified = e.text;
    } else if (p == "ListBucketResult/Contents") {
      if (!have_key || !have_size) {
        *error = "a Contents element without Key or Size";
        return false;
      }
      out->objects.push_back(std::move(current));
      current = ListedObject();
      have_key = have_size = false;
    } else if (p == "ListBucketResult/CommonPrefixes/Prefix") {
      prefix = e.text;
    } else if (p == "ListBucketResult/CommonPrefixes") {
      out->common_prefixes.push_back(std::move(prefix));
      prefix.clear();
    }
  }
  if (!have_truncated) {
    *error = "no IsTruncated element";
    return false;
  }
  if (url_encoded) {
    try {
      for (ListedObject& o : out->objects) o.key = UriDecode(o.key);
      for (std::string& p : out->common_prefixes) p = UriDecode(p);
    } catch (const std::exception& e) {
      *error = e.what();
      return false;
    }
  }
  return true;
}

bool ParseInitiateMultipartUpload(std::string_view xml, std::string* upload_id,
                                  std::string* error) {
  std::vector<Element> elements;
  if (!ParseElements(xml, &elements, error)) return false;
  upload_id->clear();
  for (const Element& e : elements) {
    if (e.path == "InitiateMultipartUploadResult/UploadId") *upload_id = e.text;
  }
  if (upload_id->empty()) {
    *error = "no InitiateMultipartUploadResult/UploadId element";
    return false;
  }
  return true;
}

bool ParseCompleteMultipartUpload(std::string_view xml, std::string* etag, ErrorBody* error_body,
                                  std::string* error) {
  if (ParseError(xml, error_body)) {
    *error = error_body->code + ": " + error_body->message;
    return false;
  }
  std::vector<Element> elements;
  if (!ParseElements(xml, &elements, error)) return false;
  etag->clear();
  bool root = false;
  for (const Element& e : elements) {
    if (e.path == "CompleteMultipartUploadResult/ETag") *etag = e.text;
    if (e.path == "CompleteMultipartUploadResult") root = true;
  }
  if (!root) {
    *error = "not a CompleteMultipartUploadResult document";
    return false;
  }
  return true;
}

std::string CompleteMultipartUploadBody(const std::vector<std::string>& part_etags) {
  std::string body = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  for (size_t i = 0; i < part_etags.size(); ++i) {
    body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" +
            util::EscapeMarkup(part_etags[i]) + "</ETag></Part>";
  }
  body += "</CompleteMultipartUpload>";
  return body;
}

}  // namespace gulpdb::remote::xml
