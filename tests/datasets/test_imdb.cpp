// Reading the IMDb reviews (datasets/imdb/imdb.cpp): folder and archive, errors, caps, corrupt
// archives, and the real archive.
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("the small fixture archive and its folder give the same reviews", "[datasets]") {
  const auto from_archive = read_imdb(kSmallArchive);
  const auto from_folder = read_imdb(kSmallFolder);
  const auto from_inner = read_imdb(kSmallFolder / "aclImdb");
  for (const auto* d : {&from_archive, &from_folder, &from_inner}) {
    REQUIRE(d->train.size() == 6);  // unsup/, urls_pos.txt, labeledBow.feat, README, imdb.vocab skipped
    REQUIRE(d->test.size() == 6);
  }
  const auto same = [](const std::vector<Review>& a, const std::vector<Review>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].text == b[i].text);
      CHECK(a[i].label == b[i].label);
      CHECK(a[i].rating == b[i].rating);
      CHECK(a[i].id == b[i].id);
    }
  };
  same(from_archive.train, from_folder.train);
  same(from_archive.test, from_folder.test);
  same(from_archive.test, from_inner.test);
  // neg (label 0) by id, then pos (label 1) by id; ratings from the file names.
  const auto& tr = from_archive.train;
  CHECK(tr[0].label == 0);
  CHECK(tr[0].id == 0);
  CHECK(tr[0].rating == 1);
  CHECK(tr[0].text == "A terrible film. The plot was awful and the acting was bad.");
  CHECK(tr[1].rating == 3);
  CHECK(tr[3].label == 1);
  CHECK(tr[4].id == 1);
  CHECK(tr[4].rating == 10);
  CHECK(from_archive.test[3].text == "The best movie of 1999, a great caf\xC3\xA9 scene.");
  CHECK(read_bytes(kSmallFolder / "aclImdb/train/pos/1_10.txt") == tr[4].text);
}

TEST_CASE("reading: a missing split or an empty class names the archive or folder", "[datasets]") {
  TempDir tmp;
  const auto archive_with = [&](const std::vector<std::pair<std::string, std::string>>& files) {
    const fs::path p = tmp.path / "data.tar.gz";
    write_tar_gz(p, files);
    return p;
  };
  CHECK(read_imdb(archive_with(tiny_layout())).train.size() == 2);
  CHECK_THAT(error_of([&] { read_imdb(archive_with(without(tiny_layout(), "aclImdb/test/"))); }),
             Catch::Contains("data.tar.gz") && Catch::Contains("test/"));
  CHECK_THAT(error_of([&] { read_imdb(archive_with(without(tiny_layout(), "aclImdb/train/pos/"))); }),
             Catch::Contains("data.tar.gz") && Catch::Contains("train/pos"));
  auto renamed = tiny_layout();  // a review named otherwise is not a review
  renamed[3].first = "aclImdb/test/pos/notes.txt";
  CHECK_THAT(error_of([&] { read_imdb(archive_with(renamed)); }), Catch::Contains("test/pos"));
  auto twice = tiny_layout();
  twice.push_back({"copy/aclImdb/train/neg/0_4.txt", "again"});
  CHECK_THAT(error_of([&] { read_imdb(archive_with(twice)); }), Catch::Contains("twice"));

  const fs::path folder = tmp.path / "folder";
  fs::copy(kSmallFolder, folder, fs::copy_options::recursive);
  fs::remove_all(folder / "aclImdb/train/neg");
  fs::create_directories(folder / "aclImdb/train/neg");
  write_file(folder / "aclImdb/train/neg/readme.txt", "not a review");
  CHECK_THAT(error_of([&] { read_imdb(folder); }), Catch::Contains((folder / "aclImdb/train/neg").string()));
  write_file(folder / "aclImdb/train/neg/5_1.txt", "bad");
  fs::remove_all(folder / "aclImdb/test");
  CHECK_THAT(error_of([&] { read_imdb(folder / "aclImdb"); }), Catch::Contains((folder / "aclImdb/test").string()));
  CHECK_THAT(error_of([&] { read_imdb(tmp.path / "nowhere"); }), Catch::Contains("nowhere"));
}

// A ustar header block for a regular file `name` declaring `size` bytes (the data need not follow).
std::string ustar_header(const std::string& name, std::uint64_t size) {
  std::string h(512, '\0');
  const auto put = [&](std::size_t at, const std::string& v) { std::copy(v.begin(), v.end(), h.begin() + at); };
  put(0, name);
  put(100, "0000644");
  put(108, "0000000");
  put(116, "0000000");
  char octal[13];
  std::snprintf(octal, sizeof octal, "%011llo", static_cast<unsigned long long>(size));
  put(124, octal);
  put(136, "00000000000");
  h[156] = '0';
  put(257, "ustar");
  put(263, "00");
  put(148, std::string(8, ' '));
  unsigned sum = 0;
  for (const char c : h) sum += static_cast<unsigned char>(c);
  std::snprintf(octal, sizeof octal, "%06o", sum);
  put(148, std::string(octal, 6) + std::string(1, '\0') + " ");
  return h;
}

TEST_CASE("reading: reviews, totals and archives beyond the caps are refused with a message", "[datasets]") {
  TempDir tmp;
  // A review declaring 3 GiB (what a 3 MB gzip can expand to) is refused before a byte is read.
  const fs::path bomb = tmp.path / "bomb.tar";
  write_file(bomb, ustar_header("aclImdb/train/neg/0_1.txt", 3ull << 30) + std::string(1 << 16, 'x'));
  CHECK_THAT(error_of([&] { read_imdb(bomb); }),
             Catch::Contains("bomb.tar") && Catch::Contains("3221225472 bytes or more, above the limit of 1048576"));
  // The same with skipped entries: the archive's total counts them too.
  const fs::path skipped = tmp.path / "skipped.tar";
  write_file(skipped, ustar_header("aclImdb/train/unsup/0_0.txt", 5ull << 30) + std::string(1 << 16, 'x'));
  CHECK_THAT(error_of([&] { read_imdb(skipped); }), Catch::Contains("expands to more than the limit of 4294967296"));

  const fs::path archive = tmp.path / "tiny.tar.gz";
  write_tar_gz(archive, tiny_layout());  // reviews of 3, 4, 4 and 4 bytes
  // Reading p with one limit lowered to value (the others at their defaults) is refused with what.
  const auto refused = [&](const fs::path& p, std::uint64_t ImdbLimits::*limit, std::uint64_t value,
                           const std::string& what) {
    INFO(p << ": " << what);
    ImdbLimits limits;
    limits.*limit = value;
    CHECK_THAT(error_of([&] { read_imdb(p, ImdbSplits::Both, limits); }),
               Catch::Contains(p.string()) && Catch::Contains(what));
  };
  // "good" has 4 bytes: refused while reading, whatever the header declared.
  refused(archive, &ImdbLimits::max_review_bytes, 3, "above the limit of 3 bytes");
  refused(archive, &ImdbLimits::max_total_bytes, 10, "more than the limit of 10 bytes");
  refused(archive, &ImdbLimits::max_reviews, 3, "more than the limit of 3 reviews");
  refused(archive, &ImdbLimits::max_archive_bytes, 12, "expands to more than the limit of 12 bytes");
  refused(kSmallFolder, &ImdbLimits::max_review_bytes, 10, "above the limit of 10 bytes");
  CHECK(read_imdb(archive, ImdbSplits::Both, ImdbLimits()).train.size() == 2);
}

TEST_CASE("reading: a corrupt or truncated archive names the file", "[datasets]") {
  TempDir tmp;
  const std::string good = read_bytes(kSmallArchive);
  write_file(tmp.path / "truncated.tar.gz", good.substr(0, good.size() / 2));
  CHECK_THAT(error_of([&] { read_imdb(tmp.path / "truncated.tar.gz"); }),
             Catch::Contains("truncated.tar.gz") && Catch::Contains("corrupt"));
  write_file(tmp.path / "garbage.tar.gz", std::string(4096, '\x5a'));
  CHECK_THAT(error_of([&] { read_imdb(tmp.path / "garbage.tar.gz"); }), Catch::Contains("garbage.tar.gz"));
  std::string flipped = good;  // damaged compressed data fails the gzip check
  for (std::size_t i = 100; i < 140; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  write_file(tmp.path / "flipped.tar.gz", flipped);
  CHECK_THAT(error_of([&] { read_imdb(tmp.path / "flipped.tar.gz"); }), Catch::Contains("flipped.tar.gz"));
  CHECK_THAT(error_of([&] { verify_archive(tmp.path / "truncated.tar.gz"); }), Catch::Contains("truncated.tar.gz"));
  CHECK_NOTHROW(verify_archive(kSmallArchive));
}

TEST_CASE("the real IMDb archive reads whole and fast", "[datasets]") {
  const auto real = real_imdb_archive();
  if (!real) return;
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto data = read_imdb(*real);
  const double read_s = std::chrono::duration<double>(clock::now() - t0).count();
  REQUIRE(data.train.size() == 25000);
  REQUIRE(data.test.size() == 25000);
  for (const auto* split : {&data.train, &data.test}) {
    CHECK(std::count_if(split->begin(), split->end(), [](const Review& r) { return r.label == 1; }) == 12500);
    for (const auto& r : *split) {
      const bool rating_fits = r.label == 1 ? (r.rating >= 7 && r.rating <= 10) : (r.rating >= 1 && r.rating <= 4);
      if (!rating_fits) FAIL("review " << r.id << " has rating " << r.rating << " and label " << r.label);
      if (r.text.empty()) FAIL("review " << r.id << " is empty");
    }
  }
  const auto split = train_valid_split(data.train, 0.1, 0);
  CHECK(split.valid.size() == 2500);
  CHECK(split.train.size() == 22500);
  const auto t1 = clock::now();
  std::vector<std::string_view> texts;
  for (auto i : split.train) texts.push_back(data.train[i].text);
  const auto vocab = Vocabulary::build(texts, 20000);
  const auto train = EncodedDataset::encode(data.train, split.train, vocab, 256);
  const auto test = EncodedDataset::encode(data.test, vocab, 256);
  const double encode_s = std::chrono::duration<double>(clock::now() - t1).count();
  CHECK(vocab.size() == 20000);
  CHECK(vocab.token(2) == "the");
  CHECK(train.size() + test.size() == 47500);
  WARN("real IMDb: read " << read_s << " s; vocabulary + encoding of 47,500 reviews " << encode_s << " s");
  CHECK(read_s < 10.0);
  CHECK(encode_s < 20.0);
}
