#include "gpu/injection/process_state.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "sprof/clock.hpp"

namespace sprof::gpu::injection {
namespace {

void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

}  // namespace

void write_state(const std::string& dir, const ProcessState& s) {
  std::string json = "{\"pid\": " + std::to_string(getpid()) + ", \"state\": ";
  append_json_string(json, s.state);
  json += ", \"detail\": ";
  append_json_string(json, s.detail);
  json += ", \"cupti\": ";
  append_json_string(json, s.cupti);
  json += ", \"cupti_source\": ";
  append_json_string(json, s.cupti_source);
  json += ", \"cupti_version\": " + std::to_string(s.cupti_version);
  if (s.counts) {
    json += ", \"records\": " + std::to_string(s.counts->records) + ", \"chunks\": " + std::to_string(s.counts->chunks) +
            ", \"dropped\": " + std::to_string(s.counts->dropped) + ", \"untimed\": " + std::to_string(s.counts->untimed);
  }
  json += ", \"monotonic_ns\": " + std::to_string(monotonic_ns()) + "}\n";

  std::string path = dir + "/" + std::to_string(getpid()) + ".json";
  std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < json.size()) {
    ssize_t n = ::write(fd, json.data() + done, json.size() - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  ::close(fd);
  if (done == json.size()) {
    ::rename(temp.c_str(), path.c_str());
  } else {
    ::unlink(temp.c_str());
  }
}

}  // namespace sprof::gpu::injection
