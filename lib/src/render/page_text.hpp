#pragma once
// Text that goes inside the inlined <script> elements of sprof's HTML pages (report, diff).

#include <string>
#include <string_view>

namespace sprof::render {

// JSON inside a <script> element: every '<' as \u003c. A "</script" would end the element, and a
// "<!--" followed by "<script" (a function so named) makes the parser skip the real "</script>",
// so that the page's own script is swallowed and nothing renders. Only inside JSON strings can a
// '<' occur, and there \u003c reads back as '<'.
std::string json_script_safe(std::string_view json);

// The page's JavaScript (sprof's own, no "<!--"): "</" becomes "<\/" (the same string in
// JavaScript strings and regular expressions).
std::string script_safe(std::string_view text);

}  // namespace sprof::render
