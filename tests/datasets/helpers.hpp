// Shared by the tests of datasets/: the fixture archive and folder, writing files and small archives,
// a loopback HTTP server, a LocateOptions that sees nothing of this machine, and synthetic encoded data.
#pragma once

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
#include <optional>
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

namespace tapegrad::testing::datasets_data {
using namespace tapegrad::datasets;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;
using testing::error_of;

inline const fs::path kData = TAPEGRAD_TEST_DATA_DIR;
inline const fs::path kSmallArchive = kData / "aclImdb_small.tar.gz";
inline const fs::path kSmallFolder = kData / "aclImdb_small";
inline const fs::path kRepoRoot = kData.parent_path().parent_path();

// Writes bytes to p, creating its folders.
inline void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes a gzip-compressed tar holding `files` (path -> contents) with libarchive.
inline void write_tar_gz(const fs::path& p, const std::vector<std::pair<std::string, std::string>>& files) {
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
inline std::vector<std::pair<std::string, std::string>> tiny_layout() {
  return {{"aclImdb/train/neg/0_1.txt", "bad"},
          {"aclImdb/train/pos/0_9.txt", "good"},
          {"aclImdb/test/neg/0_2.txt", "dull"},
          {"aclImdb/test/pos/0_8.txt", "fine"}};
}

inline std::vector<std::pair<std::string, std::string>> without(std::vector<std::pair<std::string, std::string>> files,
                                                                const std::string& prefix) {
  files.erase(std::remove_if(files.begin(), files.end(), [&](const auto& f) { return f.first.rfind(prefix, 0) == 0; }),
              files.end());
  return files;
}

// The real labeled IMDb archive: next to the repository as in CI, or where TAPEGRAD_DATA points (for a
// worktree elsewhere). Empty, with a warning that the test is skipped, when neither is there.
inline std::optional<fs::path> real_imdb_archive() {
  fs::path real = (kRepoRoot / ".." / "shared" / "data" / "aclImdb_labeled.tar.gz").lexically_normal();
  if (const char* env = std::getenv("TAPEGRAD_DATA"); !fs::exists(real) && env && fs::is_regular_file(env)) real = env;
  if (fs::exists(real)) return real;
  WARN("skipped: " << real.string() << " is absent");
  return std::nullopt;
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
inline LocateOptions isolated_options(const fs::path& root) {
  LocateOptions o;
  o.places = {{root / "shared/data/aclImdb_labeled.tar.gz", "the shared copy"},
              {root / "mirror/aclImdb", "the mirror"}};
  o.working_dir = root / "work";
  o.cache_dir = root / "cache";
  o.download = false;
  o.show_progress = false;
  return o;
}

// n reviews of 1..n tokens ("w w w ..."), alternating labels, encoded with max_len.
inline EncodedDataset synthetic(std::size_t n, std::size_t max_len) {
  std::vector<Review> reviews;
  for (std::size_t i = 0; i < n; ++i) {
    std::string text;
    for (std::size_t k = 0; k <= (i * 7) % n; ++k) text += "w ";
    reviews.push_back({text, static_cast<std::int64_t>(i % 2), 1, static_cast<std::int64_t>(i)});
  }
  return EncodedDataset::encode(reviews, Vocabulary::build(Strings{"w"}, 3), max_len);
}

inline std::vector<std::size_t> flatten(const std::vector<std::vector<std::size_t>>& plan) {
  std::vector<std::size_t> all;
  for (const auto& b : plan) all.insert(all.end(), b.begin(), b.end());
  return all;
}

}  // namespace tapegrad::testing::datasets_data
