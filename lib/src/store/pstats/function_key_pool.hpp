#pragma once
// FunctionKeyPool's insides, shared by the cache that numbers keys and the table that needs
// their text back (lib/src/store/pstats/function_key_pool.cpp says how the threads share it).

#include <deque>
#include <mutex>
#include <utility>

#include "sprof/pstats.hpp"
#include "store/pstats/pstats_view.hpp"

namespace sprof::store {

struct FunctionKeyPool::Data {
  mutable std::mutex mutex;
  std::deque<FunctionKey> keys;  // by number
  detail::HashSlots index;       // hash_function_key -> number

  // The number of `key` (added if new) and the pooled copy of it.
  std::pair<uint32_t, const FunctionKey*> number(const KeyView& key) {
    std::lock_guard lock(mutex);
    uint32_t id = index.find(key.hash, [&](uint32_t i) { return key.equals(keys[i]); });
    if (id == detail::HashSlots::npos) {
      id = static_cast<uint32_t>(keys.size());
      keys.push_back(key.materialize());
      index.insert(key.hash, id);
    }
    return {id, &keys[id]};
  }
};

}  // namespace sprof::store
