#include "sprof/closest_name.hpp"

#include <algorithm>

namespace sprof {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = std::max<size_t>(1, std::min<size_t>(2, word.size() / 3)) + 1;
  for (const auto& name : names) {
    size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  if (best.empty()) {
    for (const auto& name : names) {
      if (word.size() >= 3 && name.rfind(word, 0) == 0) return name;
    }
  }
  return best;
}

}  // namespace sprof
