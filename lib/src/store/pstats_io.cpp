// pstats files in and out: parse/read build a StatsTable (or add into one), serialize/write
// produce the marshal bytes pstats.Stats() loads.

#include <new>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/pstats.hpp"
#include "store/file_bytes.hpp"
#include "store/marshal_reader.hpp"
#include "store/marshal_writer.hpp"
#include "store/pstats_view.hpp"

namespace sprof::store {
namespace {

// One scratch ParsedStats and file buffer per thread: aggregating thousands of files reuses
// their capacity instead of reallocating for each.
struct Scratch {
  ParsedStats parsed;
  std::string bytes;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace

Result<StatsTable> parse_pstats(std::string_view bytes, const std::string& source) {
  ParsedStats& parsed = scratch().parsed;
  SPROF_TRY_STATUS(parse_pstats_view(bytes, source, parsed));
  StatsTable table;
  StatsTableAccess::merge(table, parsed, /*fresh=*/true);
  return table;
}

Result<StatsTable> read_pstats(const std::filesystem::path& path) {
  std::string& bytes = scratch().bytes;
  SPROF_TRY_STATUS(files_for(path).read(path, bytes));
  return parse_pstats(bytes, path.string());
}

Status StatsTable::add_bytes(std::string_view bytes, const std::string& source) {
  ParsedStats& parsed = scratch().parsed;
  SPROF_TRY_STATUS(parse_pstats_view(bytes, source, parsed));
  StatsTableAccess::merge(*this, parsed, /*fresh=*/false);
  return {};
}

Status StatsTable::add_file(const std::filesystem::path& path) {
  std::string& bytes = scratch().bytes;
  SPROF_TRY_STATUS(files_for(path).read(path, bytes));
  return add_bytes(bytes, path.string());
}

struct ParsedPstats::Data {
  std::string bytes;  // never moves: Data lives on the heap
  ParsedStats parsed;
};

ParsedPstats::ParsedPstats() = default;
ParsedPstats::~ParsedPstats() = default;
ParsedPstats::ParsedPstats(ParsedPstats&&) noexcept = default;
ParsedPstats& ParsedPstats::operator=(ParsedPstats&&) noexcept = default;

size_t ParsedPstats::size() const { return data_ ? data_->parsed.functions.size() : 0; }

Result<ParsedPstats> parse_pstats_owned(std::string bytes, const std::string& source) {
  ParsedPstats result;
  result.data_ = std::make_unique<ParsedPstats::Data>();
  result.data_->bytes = std::move(bytes);
  SPROF_TRY_STATUS(parse_pstats_view(result.data_->bytes, source, result.data_->parsed));
  return result;
}

Result<ParsedPstats> read_pstats_parsed(const std::filesystem::path& path) {
  std::string bytes;
  SPROF_TRY_STATUS(files_for(path).read(path, bytes));
  return parse_pstats_owned(std::move(bytes), path.string());
}

void StatsTable::add(const ParsedPstats& parsed) {
  if (parsed.data_) StatsTableAccess::merge(*this, parsed.data_->parsed, /*fresh=*/false);
}

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
