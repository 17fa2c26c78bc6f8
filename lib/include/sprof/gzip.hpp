#pragma once
// gzip (RFC 1952 over RFC 1951 DEFLATE), written here because the design card fixes the
// libraries (no zlib): reading torch.profiler's .json.gz traces and writing `export --gzip`.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "sprof/result.hpp"

namespace sprof::store {

// The gzip magic (1f 8b) at the start.
bool is_gzip(std::string_view bytes);

// Every member of a gzip file, concatenated (as gzip -dc). Header flags (FEXTRA, FNAME,
// FCOMMENT, FHCRC) are skipped; each member's CRC-32 and length are checked. Malformed input,
// or output over max_output bytes, is a bad_input error starting with `source`.
Result<std::string> gunzip(std::string_view bytes, const std::string& source, size_t max_output);

// The same, handing the output to `sink` in pieces of about 1 MiB as it is decoded (memory stays
// at the window's size); the sink's error stops it and is returned. Pieces already handed on
// stay handed on when the data turns out damaged later.
using TextSink = std::function<Status(std::string_view piece)>;
Status gunzip_stream(std::string_view bytes, const std::string& source, size_t max_output, const TextSink& sink);

// One gzip member: LZ77 over a 32 KiB window with hash chains, coded with DEFLATE's fixed
// Huffman codes (stored blocks when that would be larger).
std::string gzip(std::string_view data);

}  // namespace sprof::store
