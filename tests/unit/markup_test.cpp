// Escaping text for HTML, SVG and XML (sprof/markup.hpp).

#include <string>

#include <catch2/catch.hpp>

#include "sprof/markup.hpp"

TEST_CASE("markup escaping: entities, control characters, UTF-8 untouched", "[markup]") {
  CHECK(sprof::markup_escaped("a<b> & \"c\" 'd'") == "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
  CHECK(sprof::markup_escaped("tab\there\nnew\x01line") == "tab\there new line");
  CHECK(sprof::markup_escaped("spin_\xcf\x83") == "spin_\xcf\x83");
  std::string out = "x";
  sprof::append_markup_escaped(out, "&");
  CHECK(out == "x&amp;");
}
