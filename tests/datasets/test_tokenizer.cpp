// The tokenizer (datasets/text/tokenizer.cpp): words, punctuation, quotes, breaks and bytes, against a
// second implementation of the rule.
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("tokenizer: words, punctuation and digits", "[datasets]") {
  CHECK(tokenize("A great film!") == Strings{"a", "great", "film", "!"});
  CHECK(tokenize("great!!") == Strings{"great", "!", "!"});
  CHECK(tokenize("Wait...what?") == Strings{"wait", ".", ".", ".", "what", "?"});
  CHECK(tokenize("10/10, 1999 (R2-D2)") == Strings{"10", "/", "10", ",", "1999", "(", "r2", "-", "d2", ")"});
  CHECK(tokenize("MiXeD CaSe") == Strings{"mixed", "case"});
  CHECK(tokenize("tab\tnew\nline\r\nvt\vff\f end") == Strings{"tab", "new", "line", "vt", "ff", "end"});
  CHECK(tokenize("\"quoted\"") == Strings{"\"", "quoted", "\""});
}

TEST_CASE("tokenizer: apostrophes stay inside words", "[datasets]") {
  CHECK(tokenize("Don't") == Strings{"don't"});
  CHECK(tokenize("the 1950's and '90s") == Strings{"the", "1950's", "and", "'90s"});
  CHECK(tokenize("'quote' ''") == Strings{"'quote'", "''"});
}

TEST_CASE("tokenizer: typographic and mis-encoded quotes read as their ASCII forms", "[datasets]") {
  // U+2019, U+2018, U+00B4, U+0091, U+0092 and '`' are apostrophes, inside words as "'" is.
  CHECK(tokenize("Isn\xE2\x80\x99t it") == Strings{"isn't", "it"});
  CHECK(tokenize("\xE2\x80\x98quote\xE2\x80\x99") == Strings{"'quote'"});
  CHECK(tokenize("can\xC2\xB4t won\xC2\x92t it\xC2\x91s `90s") == Strings{"can't", "won't", "it's", "'90s"});
  // U+201C, U+201D, U+0093 and U+0094 are '"', a token of its own.
  CHECK(tokenize("\xE2\x80\x9CGreat\xE2\x80\x9D") == Strings{"\"", "great", "\""});
  CHECK(tokenize("\xC2\x93ok\xC2\x94") == Strings{"\"", "ok", "\""});
  // Other multi-byte characters stay bytes, each its own token, including the dash next to them.
  CHECK(tokenize("a\xE2\x80\x94 b") == Strings{"a", "\xE2", "\x80", "\x94", "b"});
  CHECK(tokenize("caf\xC3\xA9") == Strings{"caf", "\xC3", "\xA9"});
  // A truncated sequence at the end is bytes too.
  CHECK(tokenize("x\xE2\x80") == Strings{"x", "\xE2", "\x80"});
  CHECK(tokenize("x\xC2") == Strings{"x", "\xC2"});
  // What the quotes stand for: the same ids as the ASCII spelling.
  CHECK(tokenize("didn\xE2\x80\x99t") == tokenize("didn't"));
}

namespace {
std::string from_hex(std::string_view hex) {
  REQUIRE(hex.size() % 2 == 0);
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}
}  // namespace

TEST_CASE("tokenizer: the same tokens as a second implementation of the rule on tricky and random bytes",
          "[datasets]") {
  // tests/fixtures/make_tokenizer_fixtures.py, written from the header's rule alone: tricky inputs and
  // seeded random ones built of the bytes the rule treats apart (quotes, "<br />", cut UTF-8).
  std::ifstream in(std::string(TAPEGRAD_TEST_FIXTURES_DIR) + "/tokenizer_cases.txt");
  REQUIRE(in.good());
  std::size_t cases = 0, mismatches = 0;
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    Strings expected;
    std::istringstream tokens(line.substr(tab + 1));
    for (std::string hex; tokens >> hex;) expected.push_back(from_hex(hex));
    const std::string text = from_hex(std::string_view(line).substr(0, tab));
    if (tokenize(text) != expected) {
      ++mismatches;
      UNSCOPED_INFO("input (hex) " << line.substr(0, tab));
    }
    ++cases;
  }
  CHECK(cases == 2524);
  CHECK(mismatches == 0);
}

TEST_CASE("tokenizer: <br /> is a space, in any case, other break spellings are not", "[datasets]") {
  CHECK(tokenize("end.<br /><br />Next") == Strings{"end", ".", "next"});
  CHECK(tokenize("a<br />b") == Strings{"a", "b"});
  CHECK(tokenize("a<BR />b<Br />c") == Strings{"a", "b", "c"});
  CHECK(tokenize("a<br/>b") == Strings{"a", "<", "br", "/", ">", "b"});
  CHECK(tokenize("a<br>b") == Strings{"a", "<", "br", ">", "b"});
  CHECK(tokenize("<br /") == Strings{"<", "br", "/"});  // cut short at the end
  CHECK(tokenize("<<br />") == Strings{"<"});
}

TEST_CASE("tokenizer: non-ASCII bytes are one-byte tokens, empty reviews have no tokens", "[datasets]") {
  CHECK(tokenize("caf\xC3\xA9") == Strings{"caf", "\xC3", "\xA9"});
  CHECK(tokenize("\xC3\x89T\xC3\x89") == Strings{"\xC3", "\x89", "t", "\xC3", "\x89"});  // no Unicode lower-casing
  CHECK(tokenize(std::string("a\0b", 3)) == Strings{"a", std::string(1, '\0'), "b"});
  CHECK(tokenize("").empty());
  CHECK(tokenize(" \t\n ").empty());
  CHECK(tokenize("<br /><BR />").empty());
}
