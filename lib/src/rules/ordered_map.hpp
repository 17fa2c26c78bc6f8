#pragma once
// A map that iterates in insertion order, as the Python dicts in smdebug's rules do; their report
// Details (and which entry is "first" or "last") depend on that order.

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sprof::rules {

template <class K, class V, class Hash = std::hash<K>>
class OrderedMap {
 public:
  V& operator[](const K& key) {
    auto it = index_.find(key);
    if (it != index_.end()) return entries_[it->second].second;
    index_.emplace(key, entries_.size());
    entries_.emplace_back(key, V{});
    return entries_.back().second;
  }
  V* find(const K& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  const V* find(const K& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  bool contains(const K& key) const { return index_.count(key) != 0; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void clear() {
    entries_.clear();
    index_.clear();
  }
  auto begin() { return entries_.begin(); }
  auto end() { return entries_.end(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  const std::pair<K, V>& front() const { return entries_.front(); }

 private:
  std::vector<std::pair<K, V>> entries_;
  std::unordered_map<K, size_t, Hash> index_;
};

}  // namespace sprof::rules
