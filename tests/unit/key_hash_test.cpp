// scan_text: the reader's one pass that hashes a str and tells whether marshal's Latin-1 needs
// re-encoding. Its short-tail tricks (overlapping words, first/middle/last byte) must see every
// byte at every length.

#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "store/codecs/key_hash.hpp"

using sprof::store::hash_text;
using sprof::store::scan_text;

TEST_CASE("scan_text: a byte over 0x7f is found at every position of every length", "[pstats]") {
  for (size_t n = 0; n <= 40; ++n) {
    std::string text(n, 'a');
    CHECK(scan_text(text).ascii);
    for (size_t at = 0; at < n; ++at) {
      std::string latin1 = text;
      latin1[at] = '\xe4';
      INFO("length " << n << ", byte " << at);
      CHECK_FALSE(scan_text(latin1).ascii);
    }
  }
}

TEST_CASE("scan_text: equal strings hash alike, and each byte and the length count", "[pstats]") {
  // Every string of up to 3 letters from a 6-letter alphabet (259 of them), and every string of
  // 1..24 'a's with one byte changed (each position): a hash that skipped a byte or ignored the
  // length would collide here. 64-bit hashes of these ~580 strings collide by chance with
  // probability ~1e-14.
  std::set<std::string> texts;
  const std::string alphabet = "abcdef";
  texts.insert("");
  for (char a : alphabet) {
    texts.insert(std::string(1, a));
    for (char b : alphabet) {
      texts.insert(std::string{a, b});
      for (char c : alphabet) texts.insert(std::string{a, b, c});
    }
  }
  for (size_t n = 1; n <= 24; ++n) {
    std::string text(n, 'a');
    texts.insert(text);
    for (size_t at = 0; at < n; ++at) {
      std::string changed = text;
      changed[at] = 'b';
      texts.insert(changed);
    }
  }
  std::set<uint64_t> hashes;
  for (const std::string& text : texts) {
    hashes.insert(scan_text(text).hash);
    CHECK(hash_text(std::string(text)) == scan_text(text).hash);  // a copy elsewhere: same hash
  }
  CHECK(hashes.size() == texts.size());
}
