#include "tapegrad/datasets/download.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace tapegrad::datasets {

namespace fs = std::filesystem;

namespace {

struct Progress {
  bool show;
  std::chrono::steady_clock::time_point last{};
  bool printed = false;
  curl_off_t shown = 0;  // curl calls back repeatedly with the same counts; print each change once
};

int on_progress(void* p, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto& prog = *static_cast<Progress*>(p);
  if (!prog.show) return 0;
  const auto t = std::chrono::steady_clock::now();
  const bool done = total > 0 && now == total;
  if (now == prog.shown || (!done && prog.printed && t - prog.last < std::chrono::milliseconds(200))) return 0;
  prog.last = t;
  prog.shown = now;
  prog.printed = true;
  const double mb = 1024.0 * 1024.0;
  if (total > 0)
    std::fprintf(stderr, "\rdownloading: %6.1f / %.1f MB (%3d%%)", double(now) / mb, double(total) / mb,
                 int(100 * now / total));
  else
    std::fprintf(stderr, "\rdownloading: %6.1f MB", double(now) / mb);
  std::fflush(stderr);
  return 0;
}

size_t on_write(char* data, size_t size, size_t n, void* file) {
  return std::fwrite(data, size, n, static_cast<std::FILE*>(file)) * size;
}

// Loopback is never sent to a proxy (a local test server must be reached directly); the user's
// no_proxy list is kept.
std::string no_proxy_list() {
  std::string list = "localhost,127.0.0.1,::1";
  for (const char* var : {"no_proxy", "NO_PROXY"})
    if (const char* v = std::getenv(var); v && *v) {
      list += ',';
      list += v;
    }
  return list;
}

// Removes the temporary file unless it was renamed.
struct TempFile {
  fs::path path;
  ~TempFile() {
    if (!path.empty()) {
      std::error_code ec;
      fs::remove(path, ec);
    }
  }
};

}  // namespace

void verify_archive(const fs::path& path) {
  std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), &archive_read_free);
  if (!a) throw std::runtime_error("verify_archive: libarchive could not allocate a reader");
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  const auto fail = [&] {
    const char* msg = archive_error_string(a.get());
    return std::runtime_error(
        fmt::format("archive '{}' is corrupt or truncated: {}", path.string(), msg ? msg : "unknown error"));
  };
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) throw fail();
  archive_entry* entry = nullptr;
  std::size_t entries = 0;
  for (;;) {
    const int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) throw fail();
    ++entries;
    char buf[1 << 16];
    la_ssize_t n;
    while ((n = archive_read_data(a.get(), buf, sizeof buf)) > 0) {
    }
    if (n < 0) throw fail();
  }
  if (entries == 0) throw std::runtime_error(fmt::format("archive '{}' holds no entries", path.string()));
}

void download_archive(const std::string& url, const fs::path& dest, bool show_progress) {
  static std::once_flag curl_ready;
  std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });

  const fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("download: cannot create folder '{}': {}", dir.string(), ec.message()));
  TempFile tmp{dest.string() + fmt::format(".part-{}", ::getpid())};
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file(std::fopen(tmp.path.c_str(), "wb"), &std::fclose);
  if (!file) throw std::runtime_error(fmt::format("download: cannot write '{}'", tmp.path.string()));

  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) throw std::runtime_error("download: libcurl could not start");
  char error[CURL_ERROR_SIZE] = "";
  Progress progress{show_progress};
  const std::string no_proxy = no_proxy_list();
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);  // an HTTP error status is a failure, not a body to save
  curl_easy_setopt(c, CURLOPT_NOPROXY, no_proxy.c_str());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  // Give up on a stalled transfer (under 1 KB/s for 60 s) rather than hang.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, file.get());
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &progress);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "tapegrad-datasets");

  if (show_progress) std::fprintf(stderr, "downloading %s\n  to %s\n", url.c_str(), dest.c_str());
  const CURLcode rc = curl_easy_perform(c);
  if (progress.printed) std::fputc('\n', stderr);
  const bool closed = std::fclose(file.release()) == 0;
  if (rc != CURLE_OK)
    throw std::runtime_error(fmt::format("download of {} failed: {}", url, error[0] ? error : curl_easy_strerror(rc)));
  if (!closed) throw std::runtime_error(fmt::format("download: writing '{}' failed", tmp.path.string()));
  try {
    verify_archive(tmp.path);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("download of {} gave an incomplete or corrupt archive ({}); nothing was saved", url, e.what()));
  }
  fs::rename(tmp.path, dest, ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("download: cannot rename '{}' to '{}': {}", tmp.path.string(), dest.string(), ec.message()));
  tmp.path.clear();
}

}  // namespace tapegrad::datasets
