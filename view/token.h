// The viewer's access token: what a request must carry (docs/view.md,
// "Security"). A token is 32 bytes from the kernel's random source (256
// bits), written in URL-safe base64 without padding ([A-Za-z0-9_-], 43
// characters). The page's address carries it once; the answer sets it as
// an HttpOnly, SameSite=Strict cookie named after the port (two viewers on
// one host do not overwrite each other's), which later requests carry.
//
// Thread safety: pure functions.
#ifndef GULPDB_VIEW_TOKEN_H_
#define GULPDB_VIEW_TOKEN_H_

#include <string>
#include <string_view>

namespace gulpdb::view {

// A new token. Throws IoError if the random source fails.
std::string NewToken();

// Whether `given` is `token`, in time that depends only on their lengths
// (a client cannot find the token byte by byte from answer times).
bool TokenMatches(std::string_view given, std::string_view token);

// The cookie's name for a server on `port`.
std::string CookieName(int port);
// The Set-Cookie header's value that gives `token` to the browser.
std::string SetCookieValue(int port, std::string_view token);
// The value of cookie `name` in a Cookie header ("a=1; b=2"), or "" when
// the header has none of that name.
std::string CookieValue(std::string_view header, std::string_view name);

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_TOKEN_H_
