// The vocabulary (datasets/text/vocab.cpp): its order, and save and load.
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("vocabulary: specials first, then by count, ties in ascending byte order", "[datasets]") {
  // counts: the 4, b 2, a 2, ! 2, z 1, \xC3 1, \xA9 1
  const Strings texts = {"the the b a !", "the the z b a ! caf\xC3\xA9"};
  const auto v = Vocabulary::build(texts, 100);
  CHECK(v.tokens() == Strings{"<pad>", "<unk>", "the", "!", "a", "b", "caf", "z", "\xA9", "\xC3"});
  CHECK(v.id("the") == 2);
  CHECK(v.id("never seen") == Vocabulary::unk_id);
  CHECK(v.token(0) == "<pad>");
  CHECK_THROWS_AS(v.token(10), std::out_of_range);
  // vocab_size counts <pad> and <unk>: 5 keeps 3 tokens; the tie at count 2 goes to "!" then "a".
  const auto small = Vocabulary::build(texts, 5);
  CHECK(small.size() == 5);
  CHECK(small.tokens() == Strings{"<pad>", "<unk>", "the", "!", "a"});
  CHECK(small.encode("The B a!") == std::vector<std::int64_t>{2, 1, 4, 3});
  CHECK(Vocabulary::build(texts, 2).tokens() == Strings{"<pad>", "<unk>"});
  CHECK_THROWS_AS(Vocabulary::build(texts, 1), std::invalid_argument);
  // A prefix sorts before its extensions.
  CHECK(Vocabulary::build(Strings{"ab a"}, 4).tokens() == Strings{"<pad>", "<unk>", "a", "ab"});
}

TEST_CASE("vocabulary: save and load round-trip, load validates", "[datasets]") {
  TempDir tmp;
  const auto v = Vocabulary::build(Strings{"Don't stop!<br />caf\xC3\xA9 \"x\" 42 don't"}, 50);
  write_file(tmp.path / "vocab.txt", "<pad>\n<unk>\nold\n");
  v.save(tmp.path / "vocab.txt");  // replaces the file through a temporary one, renamed over it
  CHECK_FALSE(fs::exists(tmp.path / "vocab.txt.tmp"));
  const auto back = Vocabulary::load(tmp.path / "vocab.txt");
  CHECK(back.tokens() == v.tokens());
  std::string expected;
  for (const auto& t : v.tokens()) expected += t + "\n";
  CHECK(read_bytes(tmp.path / "vocab.txt") == expected);
  CHECK(v.tokens()[2] == "\"");  // count 2, before "don't" (count 2) in byte order

  const auto load_error = [&](const std::string& bytes) {
    write_file(tmp.path / "bad.txt", bytes);
    return error_of([&] { Vocabulary::load(tmp.path / "bad.txt"); });
  };
  CHECK_THAT(load_error("<unk>\n<pad>\n"), Catch::Contains("bad.txt") && Catch::Contains("line 1"));
  CHECK_THAT(load_error("<pad>\n"), Catch::Contains("bad.txt"));
  CHECK_THAT(load_error("<pad>\n<unk>\nthe\n\n"), Catch::Contains("line 4") && Catch::Contains("empty"));
  CHECK_THAT(load_error("<pad>\n<unk>\nthe\nthe\n"), Catch::Contains("twice"));
  CHECK_THAT(load_error("<pad>\n<unk>\ntwo words\n"), Catch::Contains("line 3"));
  CHECK_THAT(load_error("<pad>\n<unk>\nthe\r\n"), Catch::Contains("line 3"));
  CHECK_THAT(load_error("<pad>\n<unk>\nThe\n"), Catch::Contains("line 3"));
  CHECK_THAT(load_error("<pad>\n<unk>\ncaf\xC3\xA9\n"), Catch::Contains("line 3"));
  CHECK_THAT(error_of([&] { Vocabulary::load(tmp.path / "missing.txt"); }), Catch::Contains("missing.txt"));
  // A 10 MB line is named, not echoed.
  const std::string huge = load_error("<pad>\n<unk>\n" + std::string(10 << 20, 'A') + "\n");
  CHECK_THAT(huge, Catch::Contains("line 3") && Catch::Contains("(10485760 bytes)"));
  CHECK(huge.size() < 300);
  CHECK(load_error(std::string(10 << 20, 'x')).size() < 300);
  // No final newline is fine.
  write_file(tmp.path / "ok.txt", "<pad>\n<unk>\nthe\n!");
  CHECK(Vocabulary::load(tmp.path / "ok.txt").tokens() == Strings{"<pad>", "<unk>", "the", "!"});
}
