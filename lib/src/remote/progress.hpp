#pragma once
// A progress line on stderr for transfers that take longer than a second (only when the
// options ask for it: a terminal), rewritten in place and cleared at the end.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace sprof::remote {

class ProgressLine {
 public:
  ProgressLine(bool enabled, std::string what) : enabled_(enabled), what_(std::move(what)) {}
  ~ProgressLine() {
    if (shown_) fmt::print(stderr, "\r\x1b[K");
  }
  void update(size_t done, size_t total, uint64_t bytes) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    fmt::print(stderr, "\rsprof: {} {}/{} objects, {:.1f} MB\x1b[K", what_, done, total, double(bytes) / 1e6);
    std::fflush(stderr);
    shown_ = true;
  }

 private:
  bool enabled_;
  std::string what_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace sprof::remote
