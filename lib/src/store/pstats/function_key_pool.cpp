// FunctionKeyPool and FunctionKeyCache: numbers for function keys, shared between threads.
//
// The pool keeps each distinct key once, in a deque (elements never move), under a mutex. A
// cache keeps, for its own thread, pointers to the pooled keys it has looked up: reading them
// needs no lock, since an element is complete before the lock that published it is released
// and nothing writes it afterwards.

#include "store/pstats/function_key_pool.hpp"

namespace sprof::store {

FunctionKeyPool::FunctionKeyPool() : data_(std::make_unique<Data>()) {}
FunctionKeyPool::~FunctionKeyPool() = default;

size_t FunctionKeyPool::size() const {
  std::lock_guard lock(data_->mutex);
  return data_->keys.size();
}

struct FunctionKeyCache::Data {
  // Where a key's strings lie in the bytes of the file being numbered. marshal writes a str
  // object once and refers back to it after (FLAG_REF), so a caller's file and function name
  // are the very bytes of its own function's key: a key found at the same place earlier in the
  // same file is the same key, known without comparing strings. (Equal strings at different
  // places are compared as usual.)
  struct Place {
    const char* file = nullptr;
    size_t file_size = 0;
    const char* name = nullptr;
    size_t name_size = 0;
    int64_t line = 0;
    bool operator==(const Place&) const = default;
  };
  struct Entry {
    const FunctionKey* key;  // the pooled key
    uint32_t id;             // its number
    uint32_t file;           // the file `place` was seen in (0: none)
    Place place;
  };

  FunctionKeyPool* pool;
  detail::HashSlots index;  // hash_function_key -> entries
  std::vector<Entry> entries;
  uint32_t file = 0;  // counts the files numbered, from 1

  void next_file() {
    if (++file == 0) {  // wrapped: no place seen before is trusted
      for (Entry& entry : entries) entry.file = 0;
      file = 1;
    }
  }

  uint32_t number(const KeyView& key) {
    const Place place{key.file.data(), key.file.size(), key.name.data(), key.name.size(), key.line};
    uint32_t at = index.find(key.hash, [&](uint32_t i) {
      Entry& entry = entries[i];
      if (entry.file == file && entry.place == place) return true;
      if (!key.equals(*entry.key)) return false;
      entry.file = file;
      entry.place = place;
      return true;
    });
    if (at != detail::HashSlots::npos) return entries[at].id;
    auto [id, pooled] = pool->data_->number(key);
    index.insert(key.hash, static_cast<uint32_t>(entries.size()));
    entries.push_back(Entry{pooled, id, file, place});
    return id;
  }
};

FunctionKeyCache::FunctionKeyCache(FunctionKeyPool& pool) : data_(std::make_unique<Data>()) { data_->pool = &pool; }
FunctionKeyCache::~FunctionKeyCache() = default;

void FunctionKeyCache::number_keys(ParsedPstats& parsed) {
  if (!parsed.data_) return;
  ParsedStats& stats = parsed.data_->parsed;
  stats.function_ids.resize(stats.functions.size());
  stats.caller_ids.resize(stats.callers.size());
  data_->next_file();
  for (size_t i = 0; i < stats.functions.size(); ++i) stats.function_ids[i] = data_->number(stats.functions[i].key);
  for (size_t i = 0; i < stats.callers.size(); ++i) stats.caller_ids[i] = data_->number(stats.callers[i].key);
  stats.numbered_by = data_->pool;
}

}  // namespace sprof::store
