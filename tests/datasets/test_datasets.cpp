// The IMDb data pipeline: reading (folder, archive, errors), locating and downloading (against a
// loopback HTTP server), the tokenizer, the vocabulary, truncation, the validation split and batching.
#include <archive.h>
#include <archive_entry.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <xtensor/xview.hpp>

#include "tapegrad/datasets/download.hpp"
#include "tapegrad/datasets/imdb/imdb.hpp"
#include "tapegrad/datasets/imdb/locate.hpp"
#include "tapegrad/datasets/text/batching.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/random_crop.hpp"
#include "tapegrad/datasets/text/split.hpp"
#include "tapegrad/datasets/text/tokenizer.hpp"
#include "tapegrad/datasets/text/vocab.hpp"
#include "tapegrad/datasets/text/word_dropout.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad::datasets;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

using tapegrad::testing::TempDir;

namespace {

const fs::path kData = TAPEGRAD_TEST_DATA_DIR;
const fs::path kSmallArchive = kData / "aclImdb_small.tar.gz";
const fs::path kSmallFolder = kData / "aclImdb_small";
const fs::path kRepoRoot = kData.parent_path().parent_path();

// A fresh temporary folder, removed with everything in it.
void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes a gzip-compressed tar holding `files` (path -> contents) with libarchive.
void write_tar_gz(const fs::path& p, const std::vector<std::pair<std::string, std::string>>& files) {
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  REQUIRE(archive_write_open_filename(a, p.c_str()) == ARCHIVE_OK);
  for (const auto& [name, body] : files) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(body.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_write_header(a, e);
    archive_write_data(a, body.data(), body.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

// One review per split and class, named aclImdb/<split>/<class>/<id>_<rating>.txt.
std::vector<std::pair<std::string, std::string>> tiny_layout() {
  return {{"aclImdb/train/neg/0_1.txt", "bad"},
          {"aclImdb/train/pos/0_9.txt", "good"},
          {"aclImdb/test/neg/0_2.txt", "dull"},
          {"aclImdb/test/pos/0_8.txt", "fine"}};
}

std::vector<std::pair<std::string, std::string>> without(std::vector<std::pair<std::string, std::string>> files,
                                                         const std::string& prefix) {
  files.erase(std::remove_if(files.begin(), files.end(), [&](const auto& f) { return f.first.rfind(prefix, 0) == 0; }),
              files.end());
  return files;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no std::runtime_error thrown)";
}

// `python3 -m http.server` serving `dir` on 127.0.0.1 at a free port, killed when this goes away.
class LoopbackServer {
 public:
  explicit LoopbackServer(const fs::path& dir) {
    for (int attempt = 0; attempt < 3 && pid_ <= 0; ++attempt) start(dir);
    if (pid_ <= 0) throw std::runtime_error("could not start python3 -m http.server on 127.0.0.1");
  }
  ~LoopbackServer() { stop(); }
  std::string url(const std::string& file) const { return "http://127.0.0.1:" + std::to_string(port_) + "/" + file; }

 private:
  static int free_port() {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
    close(s);
    return ntohs(addr.sin_port);
  }
  bool accepting() const {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    const bool ok = connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(s);
    return ok;
  }
  void start(const fs::path& dir) {
    port_ = free_port();
    const std::string port = std::to_string(port_), root = dir.string();
    const char* python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    pid_ = fork();
    if (pid_ == 0) {
      const int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execlp(python, python, "-m", "http.server", "--bind", "127.0.0.1", "--directory", root.c_str(), port.c_str(),
             static_cast<char*>(nullptr));
      _exit(127);
    }
    // Bounded wait for the server to come up (10 s); give up early if it died (e.g. the port was taken).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (accepting()) return;
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    stop();
  }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }
  pid_t pid_ = -1;
  int port_ = 0;
};

// A LocateOptions that sees nothing of this machine: every place lies inside `root`.
LocateOptions isolated_options(const fs::path& root) {
  LocateOptions o;
  o.places = {{root / "shared/data/aclImdb_labeled.tar.gz", "the shared copy"},
              {root / "mirror/aclImdb", "the mirror"}};
  o.working_dir = root / "work";
  o.cache_dir = root / "cache";
  o.download = false;
  o.show_progress = false;
  return o;
}

}  // namespace

// ---- tokenizer ----

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

// ---- vocabulary ----

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

// ---- truncation and encoding ----

TEST_CASE("truncation: head, tail and head_tail, padded with 0 at the end", "[datasets]") {
  const std::vector<std::int64_t> ids = {11, 12, 13, 14, 15, 16, 17};
  using V = std::vector<std::int64_t>;
  CHECK(truncate_and_pad(ids, 3) == V{11, 12, 13});
  CHECK(truncate_and_pad(ids, 3, Truncation::head) == V{11, 12, 13});
  CHECK(truncate_and_pad(ids, 3, Truncation::tail) == V{15, 16, 17});
  CHECK(truncate_and_pad(ids, 3, Truncation::head_tail) == V{11, 12, 17});  // odd: ceil half from the head
  CHECK(truncate_and_pad(ids, 4, Truncation::head_tail) == V{11, 12, 16, 17});
  CHECK(truncate_and_pad(ids, 1, Truncation::head_tail) == V{11});
  for (auto t : {Truncation::head, Truncation::tail, Truncation::head_tail}) {
    CHECK(truncate_and_pad(ids, 7, t) == ids);
    CHECK(truncate_and_pad(ids, 9, t) == V{11, 12, 13, 14, 15, 16, 17, 0, 0});
    CHECK(truncate_and_pad({}, 2, t) == V{0, 0});
    CHECK(parse_truncation(truncation_name(t)) == t);
  }
  CHECK_THROWS_AS(parse_truncation("middle"), std::invalid_argument);
}

TEST_CASE("EncodedDataset keeps lengths, token counts and labels", "[datasets]") {
  std::vector<Review> reviews = {{"a b c d e", 0, 1, 0}, {"", 1, 10, 1}, {"c a", 1, 8, 2}};
  const auto vocab = Vocabulary::build(Strings{"a b c d e"}, 10);  // a=2 b=3 c=4 d=5 e=6
  const auto enc = EncodedDataset::encode(reviews, vocab, 3, Truncation::head_tail);
  REQUIRE(enc.size() == 3);
  CHECK(enc.max_len() == 3);
  CHECK(enc.token_counts() == std::vector<std::size_t>{5, 0, 2});
  CHECK(enc.length(0) == 3);
  CHECK(std::vector<std::int64_t>(enc.ids(0), enc.ids(0) + 3) == std::vector<std::int64_t>{2, 3, 6});
  CHECK(enc.length(1) == 0);
  CHECK(std::vector<std::int64_t>(enc.ids(2), enc.ids(2) + 2) == std::vector<std::int64_t>{4, 2});
  CHECK(enc.labels() == std::vector<std::int64_t>{0, 1, 1});
  const auto sub = EncodedDataset::encode(reviews, {2, 0}, vocab, 2, Truncation::tail);
  CHECK(sub.labels() == std::vector<std::int64_t>{1, 0});
  CHECK(std::vector<std::int64_t>(sub.ids(1), sub.ids(1) + 2) == std::vector<std::int64_t>{5, 6});
  CHECK_THROWS_AS(EncodedDataset::encode(reviews, vocab, 0), std::invalid_argument);
  CHECK_THROWS_AS(EncodedDataset::encode(reviews, {3}, vocab, 2), std::out_of_range);
}

// ---- reading ----

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
  const auto refused = [&](const fs::path& p, ImdbLimits limits, const std::string& what) {
    INFO(p << ": " << what);
    CHECK_THAT(error_of([&] { read_imdb(p, ImdbSplits::Both, limits); }),
               Catch::Contains(p.string()) && Catch::Contains(what));
  };
  ImdbLimits l;
  l.max_review_bytes = 3;  // "good" has 4: refused while reading, whatever the header declared
  refused(archive, l, "above the limit of 3 bytes");
  l = ImdbLimits();
  l.max_total_bytes = 10;
  refused(archive, l, "more than the limit of 10 bytes");
  l = ImdbLimits();
  l.max_reviews = 3;
  refused(archive, l, "more than the limit of 3 reviews");
  l = ImdbLimits();
  l.max_archive_bytes = 12;
  refused(archive, l, "expands to more than the limit of 12 bytes");
  l = ImdbLimits();
  l.max_review_bytes = 10;
  refused(kSmallFolder, l, "above the limit of 10 bytes");
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

// ---- locating and downloading ----

TEST_CASE("locate: nothing found with download off lists every place tried", "[datasets]") {
  TempDir tmp;
  const auto o = isolated_options(tmp.path);
  const std::string msg = error_of([&] { locate_imdb(o); });
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains("--data") && Catch::Contains("TAPEGRAD_DATA") && Catch::Contains("--no-download"));
  CHECK_THAT(msg, Catch::Contains((tmp.path / "shared/data/aclImdb_labeled.tar.gz").string()) &&
                      Catch::Contains((tmp.path / "mirror/aclImdb").string()));
  // Without places of the program's, none is looked at.
  auto no_places = o;
  no_places.places.clear();
  CHECK_THAT(error_of([&] { locate_imdb(no_places); }), !Catch::Contains("shared") && !Catch::Contains("mirror"));
  for (const char* name : {"aclImdb", "aclImdb_v1.tar.gz", "aclImdb_labeled.tar.gz"}) {
    CHECK_THAT(msg, Catch::Contains((tmp.path / "work/data" / name).string()));
    CHECK_THAT(msg, Catch::Contains((tmp.path / "cache" / name).string()));
  }
  CHECK_THAT(msg, Catch::Contains(kImdbUrl));  // where to get the file
  // Offline: nothing listens on 127.0.0.1:1, so the download fails and the message says so, places too.
  auto offline = o;
  offline.download = true;
  offline.url = "http://127.0.0.1:1/aclImdb_v1.tar.gz";
  const std::string offline_msg = error_of([&] { locate_imdb(offline); });
  CHECK_THAT(offline_msg, Catch::Contains("download of http://127.0.0.1:1/aclImdb_v1.tar.gz failed") &&
                              Catch::Contains((tmp.path / "work/data/aclImdb").string()) &&
                              Catch::Contains("TAPEGRAD_DATA"));
  CHECK_FALSE(fs::exists(tmp.path / "cache/aclImdb_v1.tar.gz"));
  auto no_cache = o;
  no_cache.cache_dir.reset();
  CHECK_THAT(error_of([&] { locate_imdb(no_cache); }), Catch::Contains("HOME"));
}

TEST_CASE("locate: --data, TAPEGRAD_DATA, the program's places, data/, cache, in that order", "[datasets]") {
  TempDir tmp;
  auto o = isolated_options(tmp.path);
  const fs::path cache = tmp.path / "cache/aclImdb_v1.tar.gz";
  fs::create_directories(cache.parent_path());
  fs::copy_file(kSmallArchive, cache);
  CHECK(locate_imdb(o).path == cache);
  CHECK(locate_imdb(o).source == "the cache");
  const fs::path work_archive = tmp.path / "work/data/aclImdb_labeled.tar.gz";
  fs::create_directories(work_archive.parent_path());
  fs::copy_file(kSmallArchive, work_archive);
  CHECK(locate_imdb(o).path == work_archive);
  const fs::path work_folder = tmp.path / "work/data/aclImdb";
  fs::copy(kSmallFolder / "aclImdb", work_folder, fs::copy_options::recursive);
  CHECK(locate_imdb(o).path == work_folder);
  CHECK(read_imdb(locate_imdb(o).path).test.size() == 6);
  const fs::path mirror = tmp.path / "mirror/aclImdb";
  fs::create_directories(mirror.parent_path());
  fs::copy(kSmallFolder / "aclImdb", mirror, fs::copy_options::recursive);
  CHECK(locate_imdb(o).path == mirror);
  CHECK(locate_imdb(o).source == "the mirror");
  const fs::path shared = tmp.path / "shared/data/aclImdb_labeled.tar.gz";
  fs::create_directories(shared.parent_path());
  fs::copy_file(kSmallArchive, shared);
  CHECK(locate_imdb(o).path == shared);  // the first place holding the data
  CHECK(locate_imdb(o).source == "the shared copy");
  o.env_path = kSmallFolder;
  CHECK(locate_imdb(o).path == kSmallFolder);
  CHECK(locate_imdb(o).source == "TAPEGRAD_DATA");
  o.explicit_path = kSmallArchive;
  CHECK(locate_imdb(o).path == kSmallArchive);
  // A path the user named must exist: no silent fallback.
  o.explicit_path = tmp.path / "typo.tar.gz";
  CHECK_THAT(error_of([&] { locate_imdb(o); }), Catch::Contains("--data") && Catch::Contains("typo.tar.gz"));
  o.explicit_path.reset();
  o.env_path = tmp.path / "typo2";
  CHECK_THAT(error_of([&] { locate_imdb(o); }), Catch::Contains("TAPEGRAD_DATA") && Catch::Contains("typo2"));
}

TEST_CASE("locate: the cache folder follows XDG_CACHE_HOME, else HOME", "[datasets]") {
  const auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto xdg = saved("XDG_CACHE_HOME"), home = saved("HOME"), data = saved("TAPEGRAD_DATA");
  setenv("HOME", "/home/someone", 1);
  setenv("XDG_CACHE_HOME", "/var/cache/xdg", 1);
  CHECK(default_cache_dir() == fs::path("/var/cache/xdg/tapegrad"));
  setenv("XDG_CACHE_HOME", "relative/cache", 1);  // ignored, as the XDG spec says
  CHECK(default_cache_dir() == fs::path("/home/someone/.cache/tapegrad"));
  unsetenv("XDG_CACHE_HOME");
  CHECK(default_cache_dir() == fs::path("/home/someone/.cache/tapegrad"));
  setenv("TAPEGRAD_DATA", "/some/where.tar.gz", 1);
  const auto o = LocateOptions::from_environment();
  CHECK(o.env_path == fs::path("/some/where.tar.gz"));
  CHECK(o.places.empty());  // where else to look is the program's to say
  CHECK(o.cache_dir == fs::path("/home/someone/.cache/tapegrad"));
  CHECK(o.download);
  CHECK(o.url == kImdbUrl);
  const auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v)
      setenv(name, v->c_str(), 1);
    else
      unsetenv(name);
  };
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
  restore("TAPEGRAD_DATA", data);
}

TEST_CASE("download from a loopback server: a whole archive lands in the cache, a truncated one leaves nothing",
          "[datasets]") {
  TempDir serve, cache_root;
  const std::string good = read_bytes(kSmallArchive);
  write_file(serve.path / "aclImdb_v1.tar.gz", good);
  write_file(serve.path / "cut.tar.gz", good.substr(0, good.size() - 300));
  LoopbackServer server(serve.path);
  const fs::path cache = cache_root.path / "cache";

  // Through locate_imdb, as the program calls it: nothing local, so it downloads into the cache.
  auto o = isolated_options(cache_root.path);
  o.download = true;
  o.show_progress = true;  // the progress lines go to stderr
  o.url = server.url("aclImdb_v1.tar.gz");
  const auto found = locate_imdb(o);
  CHECK(found.path == cache / "aclImdb_v1.tar.gz");
  CHECK(found.source == "downloaded to the cache");
  CHECK(read_bytes(found.path) == good);
  CHECK(read_imdb(found.path).train.size() == 6);
  CHECK(locate_imdb(o).source == "the cache");  // the second run finds it

  const fs::path dest = cache / "other.tar.gz";
  const auto cache_is_clean = [&] {
    for (const auto& e : fs::directory_iterator(cache))
      if (e.path().filename() != "aclImdb_v1.tar.gz") return false;
    return true;
  };
  const std::string cut = error_of([&] { download_archive(server.url("cut.tar.gz"), dest, false); });
  CHECK_THAT(cut, Catch::Contains("cut.tar.gz") && Catch::Contains("incomplete or corrupt"));
  CHECK_FALSE(fs::exists(dest));
  CHECK(cache_is_clean());
  const std::string missing = error_of([&] { download_archive(server.url("absent.tar.gz"), dest, false); });
  CHECK_THAT(missing, Catch::Contains("absent.tar.gz") && Catch::Contains("404"));
  CHECK(cache_is_clean());

  // A failed download inside locate_imdb reports it along with the places tried.
  fs::remove(cache / "aclImdb_v1.tar.gz");
  o.url = server.url("cut.tar.gz");
  const std::string msg = error_of([&] { locate_imdb(o); });
  CHECK_THAT(msg, Catch::Contains("incomplete or corrupt") && Catch::Contains((cache / "aclImdb_v1.tar.gz").string()));
  CHECK(fs::is_empty(cache));
}

// ---- validation split ----

TEST_CASE("validation split: seeded, stratified, disjoint and complete", "[datasets]") {
  std::vector<std::int64_t> labels(1000);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = i < 700 ? 0 : 1;
  const auto s = train_valid_split(labels, 0.1, 7);
  CHECK(s.valid.size() == 100);
  CHECK(s.train.size() == 900);
  CHECK(std::count_if(s.valid.begin(), s.valid.end(), [&](std::size_t i) { return labels[i] == 1; }) == 30);
  CHECK(std::is_sorted(s.train.begin(), s.train.end()));
  CHECK(std::is_sorted(s.valid.begin(), s.valid.end()));
  std::set<std::size_t> all(s.train.begin(), s.train.end());
  for (const auto i : s.valid) CHECK(all.insert(i).second);  // disjoint
  CHECK(all.size() == labels.size());                        // complete
  const auto again = train_valid_split(labels, 0.1, 7);
  CHECK(again.valid == s.valid);
  CHECK(again.train == s.train);
  CHECK(train_valid_split(labels, 0.1, 8).valid != s.valid);
  CHECK(train_valid_split(labels, 0.0, 7).valid.empty());
  CHECK_THROWS_AS(train_valid_split(labels, 1.0, 7), std::invalid_argument);
  const auto fixture = read_imdb(kSmallArchive);
  const auto fs_split = train_valid_split(fixture.train, 1.0 / 3.0, 0);
  CHECK(fs_split.valid.size() == 2);  // one of each class
  CHECK(fixture.train[fs_split.valid[0]].label == 0);
  CHECK(fixture.train[fs_split.valid[1]].label == 1);
}

// ---- batching ----

namespace {
// n reviews of 1..n tokens ("w w w ..."), alternating labels, encoded with max_len.
EncodedDataset synthetic(std::size_t n, std::size_t max_len) {
  std::vector<Review> reviews;
  for (std::size_t i = 0; i < n; ++i) {
    std::string text;
    for (std::size_t k = 0; k <= (i * 7) % n; ++k) text += "w ";
    reviews.push_back({text, static_cast<std::int64_t>(i % 2), 1, static_cast<std::int64_t>(i)});
  }
  return EncodedDataset::encode(reviews, Vocabulary::build(Strings{"w"}, 3), max_len);
}

std::vector<std::size_t> flatten(const std::vector<std::vector<std::size_t>>& plan) {
  std::vector<std::size_t> all;
  for (const auto& b : plan) all.insert(all.end(), b.begin(), b.end());
  return all;
}
}  // namespace

TEST_CASE("batching: shapes, padding masks and labels", "[datasets]") {
  const auto data = synthetic(10, 6);
  BatchOptions o;
  o.batch_size = 4;
  DataLoader loader(data, o);
  REQUIRE(loader.size() == 3);
  std::size_t seen = 0;
  for (std::size_t b = 0; b < loader.size(); ++b) {
    const Batch batch = loader.batch(b);
    const std::size_t B = batch.indices.size();
    CHECK(B == (b + 1 < loader.size() ? 4 : 2));
    CHECK(batch.ids.shape() == std::vector<std::size_t>{B, 6});
    CHECK(batch.padding_mask.shape() == std::vector<std::size_t>{B, 6});
    CHECK(batch.labels.shape() == std::vector<std::size_t>{B});
    for (std::size_t r = 0; r < B; ++r) {
      const std::size_t i = batch.indices[r], len = data.length(i);
      CHECK(batch.labels(r) == data.label(i));
      for (std::size_t t = 0; t < 6; ++t) {
        CHECK(batch.padding_mask(r, t) == (t >= len));
        CHECK(batch.ids(r, t) == (t < len ? data.ids(i)[t] : Vocabulary::pad_id));
      }
    }
    seen += B;
  }
  CHECK(seen == 10);
  o.drop_last = true;
  CHECK(DataLoader(data, o).size() == 2);
  o.drop_last = false;
  o.trim = true;
  o.shuffle = false;
  const Batch first = DataLoader(data, o).batch(0);  // reviews 0..3 have 1, 8, 5, 2 tokens, max_len 6
  CHECK(first.ids.shape() == std::vector<std::size_t>{4, 6});
  CHECK(first.indices == std::vector<std::size_t>{0, 1, 2, 3});
  const Batch short_batch = collate(data, {0, 3});
  CHECK(short_batch.ids.shape() == std::vector<std::size_t>{2, 2});
  CHECK(short_batch.padding_mask == xt::xarray<bool>({{false, true}, {false, false}}));
  CHECK_THROWS_AS(collate(data, {1}, 3), std::invalid_argument);
  // One rank's rows of a global batch: same length, rows in the order asked, repeats allowed.
  const Batch rows = take_rows(first, {3, 0, 3});
  CHECK(rows.ids.shape() == std::vector<std::size_t>{3, 6});
  CHECK(rows.indices == std::vector<std::size_t>{3, 0, 3});
  CHECK(xt::all(xt::equal(xt::view(rows.ids, 1), xt::view(first.ids, 0))));
  CHECK(xt::all(xt::equal(xt::view(rows.padding_mask, 2), xt::view(first.padding_mask, 3))));
  CHECK(rows.labels(0) == first.labels(3));
  CHECK_THROWS_AS(take_rows(first, {4}), std::out_of_range);
  o.batch_size = 0;
  CHECK_THROWS_AS(DataLoader(data, o), std::invalid_argument);
}

TEST_CASE("batching: each epoch's shuffle is reproducible and differs from the others", "[datasets]") {
  const auto data = synthetic(50, 60);
  BatchOptions o;
  o.batch_size = 8;
  o.seed = 3;
  DataLoader a(data, o), b(data, o);
  const auto epoch0 = a.plan();
  a.set_epoch(1);
  const auto epoch1 = a.plan();
  CHECK(epoch0 != epoch1);
  b.set_epoch(1);
  CHECK(b.plan() == epoch1);
  a.set_epoch(0);
  CHECK(a.plan() == epoch0);
  o.seed = 4;
  CHECK(DataLoader(data, o).plan() != epoch0);
  for (const auto& plan : {epoch0, epoch1}) {
    auto all = flatten(plan);
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i] == i);
  }
  o.shuffle = false;
  CHECK(flatten(DataLoader(data, o).plan())[7] == 7);
}

TEST_CASE("batching: length bucketing keeps every review exactly once and cuts padding", "[datasets]") {
  const auto data = synthetic(103, 120);
  BatchOptions o;
  o.batch_size = 8;
  o.seed = 11;
  const auto plain = DataLoader(data, o);
  o.bucket_chunk = 4;
  DataLoader bucketed(data, o);
  for (std::uint64_t epoch : {0, 1, 2}) {
    bucketed.set_epoch(epoch);
    auto all = flatten(bucketed.plan());
    REQUIRE(all.size() == data.size());
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i] == i);
    for (const auto& batch : bucketed.plan()) CHECK(batch.size() <= 8);
  }
  const auto fixed = plain.stats(), bucket = bucketed.stats();
  CHECK(fixed.tokens == bucket.tokens);
  CHECK(fixed.positions == 103 * 120);
  CHECK(bucket.positions < fixed.positions);
  CHECK(bucket.padding_fraction() < 0.25);
  const Batch b0 = bucketed.batch(0);  // trimmed to its longest review
  std::size_t longest = 0;
  for (auto i : b0.indices) longest = std::max(longest, data.length(i));
  CHECK(b0.ids.shape(1) == longest);
  // The batches of a chunk come out in shuffled order, not short to long.
  std::vector<std::size_t> first_lengths;
  for (const auto& batch : bucketed.plan()) first_lengths.push_back(data.length(batch[0]));
  CHECK_FALSE(std::is_sorted(first_lengths.begin(), first_lengths.end()));
}

TEST_CASE("random crop: a cropped row is a window of its own tokens, at the start, reproducibly", "[datasets]") {
  // Rows of different real lengths (10 .. 129), each token its position + 2, so a window shows where it began.
  const std::size_t rows = 120, cols = 130;
  xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({rows, cols});
  xt::xarray<bool> pad = xt::xarray<bool>::from_shape({rows, cols});
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      pad(r, c) = c >= 10 + r;
      ids(r, c) = pad(r, c) ? Vocabulary::pad_id : static_cast<std::int64_t>(2 + c);
    }
  }
  const CropOptions options{0.5, 8, 64};
  auto a = ids, b = ids, other_step = ids;
  auto pad_a = pad, pad_b = pad, pad_other = pad;
  random_crop(a, pad_a, options, Vocabulary::pad_id, 7, 3);
  random_crop(b, pad_b, options, Vocabulary::pad_id, 7, 3);
  random_crop(other_step, pad_other, options, Vocabulary::pad_id, 7, 4);
  CHECK(bool(a == b));
  CHECK(bool(pad_a == pad_b));
  CHECK(bool(a != other_step));
  std::size_t cropped = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t real = 10 + r;
    std::size_t kept = 0;
    while (kept < cols && !pad_a(r, kept)) ++kept;
    for (std::size_t c = kept; c < cols; ++c) {
      CHECK(pad_a(r, c));
      CHECK(a(r, c) == Vocabulary::pad_id);
    }
    if (kept == real) {
      CHECK(bool(xt::view(a, r) == xt::view(ids, r)));
      continue;
    }
    ++cropped;
    CHECK(kept >= options.min_tokens);
    CHECK(kept <= std::min(options.max_tokens, real));
    // Consecutive tokens of the original row, starting anywhere the window fits.
    const std::int64_t start = a(r, 0) - 2;
    CHECK(start >= 0);
    CHECK(static_cast<std::size_t>(start) + kept <= real);
    for (std::size_t c = 0; c < kept; ++c) CHECK(a(r, c) == ids(r, static_cast<std::size_t>(start) + c));
  }
  // 120 rows at p = 0.5, of which only the rows longer than their window change: about 60, sd ~5.5.
  CHECK(cropped > 40);
  CHECK(cropped < 80);
  auto all = ids;
  auto pad_all = pad;
  random_crop(all, pad_all, CropOptions{1.0, 5, 5}, Vocabulary::pad_id, 1, 1);
  for (std::size_t r = 0; r < rows; ++r)
    CHECK(std::count(pad_all.begin() + r * cols, pad_all.begin() + (r + 1) * cols, false) == 5);
  auto untouched = ids;
  auto pad_untouched = pad;
  random_crop(untouched, pad_untouched, CropOptions{0.0, 8, 64}, Vocabulary::pad_id, 7, 3);
  CHECK(bool(untouched == ids));
  CHECK_THROWS_WITH(random_crop(untouched, pad_untouched, CropOptions{1.5, 8, 64}, Vocabulary::pad_id, 7, 3),
                    "random_crop: p must be in [0, 1], got 1.5");
  CHECK_THROWS_WITH(random_crop(untouched, pad_untouched, CropOptions{0.5, 9, 8}, Vocabulary::pad_id, 7, 3),
                    "random_crop: window lengths [9, 8] must be positive and ordered");
  xt::xarray<bool> short_pad = xt::xarray<bool>::from_shape({rows, cols - 1});
  CHECK_THROWS_WITH(random_crop(untouched, short_pad, options, Vocabulary::pad_id, 7, 3),
                    "random_crop: ids [120, 130] and padding_mask [120, 129] must share one [B, L] shape");
}

TEST_CASE("word dropout: only real tokens become unk, at about the asked rate, reproducibly", "[datasets]") {
  xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({40, 100});
  xt::xarray<bool> pad = xt::xarray<bool>::from_shape({40, 100});
  for (std::size_t r = 0; r < 40; ++r) {
    for (std::size_t c = 0; c < 100; ++c) {
      pad(r, c) = c >= 50;
      ids(r, c) = pad(r, c) ? Vocabulary::pad_id : static_cast<std::int64_t>(2 + c);
    }
  }
  const auto original = ids;
  auto a = ids, b = ids, other_step = ids;
  word_dropout(a, pad, 0.2, Vocabulary::unk_id, 7, 3);
  word_dropout(b, pad, 0.2, Vocabulary::unk_id, 7, 3);
  word_dropout(other_step, pad, 0.2, Vocabulary::unk_id, 7, 4);
  CHECK(bool(a == b));
  CHECK(bool(a != other_step));
  std::size_t dropped = 0;
  for (std::size_t r = 0; r < 40; ++r) {
    for (std::size_t c = 0; c < 100; ++c) {
      if (pad(r, c)) {
        CHECK(a(r, c) == Vocabulary::pad_id);
      } else if (a(r, c) != original(r, c)) {
        CHECK(a(r, c) == Vocabulary::unk_id);
        ++dropped;
      }
    }
  }
  // 2,000 real tokens at p = 0.2: 400 expected, standard deviation ~18.
  CHECK(dropped > 320);
  CHECK(dropped < 480);
  auto untouched = ids;
  word_dropout(untouched, pad, 0.0, Vocabulary::unk_id, 7, 3);
  CHECK(bool(untouched == original));
  CHECK_THROWS_WITH(word_dropout(untouched, pad, 1.0, Vocabulary::unk_id, 7, 3),
                    "word_dropout: p must be in [0, 1), got 1");
  xt::xarray<bool> short_pad = xt::xarray<bool>::from_shape({40, 99});
  CHECK_THROWS_WITH(word_dropout(untouched, short_pad, 0.1, Vocabulary::unk_id, 7, 3),
                    "word_dropout: ids [40, 100] and padding_mask [40, 99] differ in shape");
}

TEST_CASE("the real IMDb archive reads whole and fast", "[datasets]") {
  // Next to the repository as in CI; a worktree elsewhere can point TAPEGRAD_DATA at the archive.
  fs::path real = (kRepoRoot / ".." / "shared" / "data" / "aclImdb_labeled.tar.gz").lexically_normal();
  if (const char* env = std::getenv("TAPEGRAD_DATA"); !fs::exists(real) && env && fs::is_regular_file(env)) real = env;
  if (!fs::exists(real)) {
    WARN("skipped: " << real.string() << " is absent");
    return;
  }
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto data = read_imdb(real);
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
