#pragma once
// libcurl, opened the first time sprof makes an HTTP request. Linked as a dependency it made every
// run of sprof load some 25 more libraries (TLS, Kerberos, LDAP, ...): 6.5 ms of a 9 ms start-up,
// paid by every query of local files. Its header still gives the types and constants.

#include <curl/curl.h>

#include "sprof/result.hpp"

namespace sprof::remote {

struct CurlLibrary {
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
};

// The library, loaded and globally initialised once (thread-safe), or why it cannot be.
Result<const CurlLibrary*> curl_library();

}  // namespace sprof::remote
