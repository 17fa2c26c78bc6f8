#pragma once
// "Did you mean ...?": the known name nearest to a mistyped one.

#include <string>
#include <vector>

namespace sprof {

// The closest of `names` to `word`: within 2 edits (Levenshtein; a third of the word for short
// ones), else the one `word` (3 characters or more) is a prefix of; "" when none is close.
std::string closest_name(const std::string& word, const std::vector<std::string>& names);

}  // namespace sprof
