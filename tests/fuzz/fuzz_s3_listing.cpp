// libFuzzer target: a ListObjectsV2 page as a server might send it (broken, hostile, endless): the
// reader returns what it finds, never crashes, and never invents more objects than the text holds.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sprof/s3.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string xml(reinterpret_cast<const char*>(data), size);
  sprof::remote::ListPage page = sprof::remote::parse_list_page(xml);
  // Each object needs at least "<Contents></Contents>".
  if (page.objects.size() * 21 > size + 21) std::abort();
  for (const auto& o : page.objects) {
    if (o.key.size() > size || o.etag.size() > size) std::abort();
  }
  if (page.next_token.size() > size) std::abort();
  return 0;
}
