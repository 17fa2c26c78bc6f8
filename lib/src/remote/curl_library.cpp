#include "remote/curl_library.hpp"

#include <dlfcn.h>

#include <string>

#include <fmt/format.h>

namespace sprof::remote {
namespace {

struct Loaded {
  CurlLibrary api;
  std::string error;
};

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& out, std::string& error) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (out == nullptr && error.empty()) error = fmt::format("no {} in libcurl.so.4", name);
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  // The soname Debian's libcurl4 (and every distribution's libcurl since 7.16) installs.
  void* handle = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    l.error = fmt::format("cannot load libcurl (libcurl.so.4, Debian's libcurl4 package), which S3 needs: {}",
                          why != nullptr ? why : "unknown error");
    return l;
  }
  decltype(&::curl_global_init) global_init = nullptr;
  CurlLibrary& a = l.api;
  resolve(handle, "curl_global_init", global_init, l.error);
  resolve(handle, "curl_easy_init", a.easy_init, l.error);
  resolve(handle, "curl_easy_cleanup", a.easy_cleanup, l.error);
  resolve(handle, "curl_easy_reset", a.easy_reset, l.error);
  resolve(handle, "curl_easy_setopt", a.easy_setopt, l.error);
  resolve(handle, "curl_easy_perform", a.easy_perform, l.error);
  resolve(handle, "curl_easy_getinfo", a.easy_getinfo, l.error);
  resolve(handle, "curl_easy_strerror", a.easy_strerror, l.error);
  resolve(handle, "curl_slist_append", a.slist_append, l.error);
  resolve(handle, "curl_slist_free_all", a.slist_free_all, l.error);
  if (l.error.empty() && global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) l.error = "libcurl failed to initialise";
  return l;  // the handle stays open: the functions are used until exit
}

}  // namespace

Result<const CurlLibrary*> curl_library() {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) return make_error(ErrorKind::runtime, "{}", loaded.error);
  return &loaded.api;
}

}  // namespace sprof::remote
