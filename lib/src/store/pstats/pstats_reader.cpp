// pstats files in: parse/read build a StatsTable (or add into one) from the marshal bytes
// pstats.Stats.dump_stats writes (decoded by pstats_parser.cpp). pstats_writer.cpp writes them.

#include <new>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/pstats.hpp"
#include "store/pstats/marshal_reader.hpp"
#include "store/pstats/pstats_view.hpp"

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

Result<StatsTable> read_pstats(const std::filesystem::path& path, const ProfileFiles& files) {
  std::string& bytes = scratch().bytes;
  SPROF_TRY_STATUS(files.read(path, bytes));
  return parse_pstats(bytes, path.string());
}

Status StatsTable::add_bytes(std::string_view bytes, const std::string& source) {
  ParsedStats& parsed = scratch().parsed;
  SPROF_TRY_STATUS(parse_pstats_view(bytes, source, parsed));
  StatsTableAccess::merge(*this, parsed, /*fresh=*/false);
  return {};
}

Status StatsTable::add_file(const std::filesystem::path& path, const ProfileFiles& files) {
  std::string& bytes = scratch().bytes;
  SPROF_TRY_STATUS(files.read(path, bytes));
  return add_bytes(bytes, path.string());
}

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

Result<ParsedPstats> read_pstats_parsed(const std::filesystem::path& path, const ProfileFiles& files) {
  std::string bytes;
  SPROF_TRY_STATUS(files.read(path, bytes));
  return parse_pstats_owned(std::move(bytes), path.string());
}

Status read_pstats_into(const std::filesystem::path& path, ParsedPstats& into, const ProfileFiles& files) {
  if (!into.data_) into.data_ = std::make_unique<ParsedPstats::Data>();
  ParsedPstats::Data& data = *into.data_;
  data.parsed.clear();
  Status status = files.read(path, data.bytes);
  if (status.ok()) status = parse_pstats_view(data.bytes, path.string(), data.parsed);
  if (!status.ok()) data.parsed.clear();
  return status;
}

void StatsTable::add(const ParsedPstats& parsed) {
  if (parsed.data_) StatsTableAccess::merge(*this, parsed.data_->parsed, /*fresh=*/false);
}

}  // namespace sprof::store
