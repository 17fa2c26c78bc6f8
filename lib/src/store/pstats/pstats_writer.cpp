// pstats files out: serialize/write produce the marshal bytes pstats.Stats() loads, keys and
// strings checked first. pstats_reader.cpp reads them back.

#include <new>
#include <vector>

#include "sprof/pstats.hpp"
#include "sprof/file_bytes.hpp"
#include "store/pstats/marshal_format.hpp"
#include "store/pstats/marshal_writer.hpp"
#include "store/pstats/pstats_view.hpp"

namespace sprof::store {

namespace {

Status check_text(std::string_view text, const FunctionKey& key, const char* part) {
  if (text.size() > INT32_MAX) {
    return make_error(ErrorKind::bad_input, "cannot write pstats: the {} of function {}:{} is "
                      "longer than marshal allows", part, key.file.substr(0, 200), key.line);
  }
  if (!marshal::is_ascii(text) && !marshal::is_utf8_surrogatepass(text)) {
    return make_error(ErrorKind::bad_input, "cannot write pstats: the {} of function {}:{}({}) "
                      "is not valid UTF-8", part, key.file, key.line, key.name);
  }
  return {};
}

// Writes function keys, each distinct one once and then as a back-reference.
class KeyWriter {
 public:
  explicit KeyWriter(marshal::Writer& w) : w_(w) {}

  Status write(const FunctionKey& key, uint64_t hash) {
    uint32_t found = slots_.find(hash, [&](uint32_t i) { return *keys_[i].key == key; });
    if (found != detail::HashSlots::npos) {
      w_.ref(keys_[found].ref);
      return {};
    }
    SPROF_TRY_STATUS(check_text(key.file, key, "file name"));
    SPROF_TRY_STATUS(check_text(key.name, key, "function name"));
    slots_.insert(hash, static_cast<uint32_t>(keys_.size()));
    keys_.push_back({&key, w_.next_ref()});
    w_.tuple(3, /*remember=*/true);
    w_.str(key.file);
    w_.integer(key.line);
    w_.str(key.name);
    return {};
  }

 private:
  struct Written {
    const FunctionKey* key;
    uint32_t ref;
  };
  marshal::Writer& w_;
  std::vector<Written> keys_;
  detail::HashSlots slots_;
};

}  // namespace

Result<std::string> serialize_pstats(const StatsTable& table) {
  if (table.empty()) {
    return make_error(ErrorKind::bad_input, "refusing to write an empty pstats file: "
                      "pstats.Stats cannot load an empty stats dict");
  }
  try {
    std::string out;
    out.reserve(64 * table.size());
    marshal::Writer w(out);
    KeyWriter keys(w);
    w.dict_begin();
    for (const auto& [key, stats] : table.entries()) {
      SPROF_TRY_STATUS(keys.write(key, FunctionKeyHash{}(key)));
      w.tuple(5);
      w.integer(stats.cc);
      w.integer(stats.nc);
      w.real(stats.tt);
      w.real(stats.ct);
      w.dict_begin();
      for (const auto& [caller, value] : stats.callers) {
        SPROF_TRY_STATUS(keys.write(caller, FunctionKeyHash{}(caller)));
        if (value.is_count) {
          w.integer(value.nc);
        } else {
          w.tuple(4);
          w.integer(value.nc);
          w.integer(value.cc);
          w.real(value.tt);
          w.real(value.ct);
        }
      }
      w.dict_end();
    }
    w.dict_end();
    return out;
  } catch (const std::bad_alloc&) {
    return make_error(ErrorKind::runtime, "out of memory while writing pstats");
  }
}

Status write_pstats(const std::filesystem::path& path, const StatsTable& table) {
  auto bytes = serialize_pstats(table);
  if (!bytes.ok()) {
    Error error = std::move(bytes).error();
    error.message = path.string() + ": " + error.message;
    return error;
  }
  return write_file_atomically(path, *bytes);
}

}  // namespace sprof::store
