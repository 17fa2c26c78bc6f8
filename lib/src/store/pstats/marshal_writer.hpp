#pragma once
// Appends marshal (version 4) encodings to a byte string: the subset pstats files use. Every
// CPython from 3.4 reads it. Strings are written once and back-referenced after that, as
// CPython's own writer does for shared objects.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sprof::store::marshal {

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void dict_begin() { out_.push_back('{'); }
  void dict_end() { out_.push_back('0'); }
  // A tuple header for n items; with `remember` it gets the next reference index.
  void tuple(size_t n, bool remember = false);
  void integer(int64_t value);
  void real(double value);  // binary64, exact
  // A str from UTF-8 bytes (the caller has checked them). A str seen before becomes a
  // back-reference; `text` must outlive the writer.
  void str(std::string_view text);
  void ref(uint32_t index);
  // The index the next remembered object will get.
  uint32_t next_ref() const { return refs_; }

 private:
  void u32(uint32_t value);
  std::string& out_;
  uint32_t refs_ = 0;
  std::unordered_map<std::string_view, uint32_t> strings_;
};

}  // namespace sprof::store::marshal
