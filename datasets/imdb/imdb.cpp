#include "tapegrad/datasets/imdb/imdb.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "tapegrad/autograd/messages.hpp"

namespace tapegrad::datasets {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSplits[2] = {"train", "test"};
constexpr const char* kClasses[2] = {"neg", "pos"};  // index = label

// "<id>_<rating>.txt" with both numbers made of digits only.
bool parse_review_name(std::string_view name, std::int64_t& id, int& rating) {
  constexpr std::string_view ext = ".txt";
  if (name.size() <= ext.size() || name.substr(name.size() - ext.size()) != ext) return false;
  name.remove_suffix(ext.size());
  const auto sep = name.find('_');
  if (sep == std::string_view::npos || sep == 0 || sep + 1 == name.size()) return false;
  const auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const auto id_part = name.substr(0, sep), rating_part = name.substr(sep + 1);
  if (!digits(id_part) || !digits(rating_part)) return false;
  const auto r1 = std::from_chars(id_part.data(), id_part.data() + id_part.size(), id);
  const auto r2 = std::from_chars(rating_part.data(), rating_part.data() + rating_part.size(), rating);
  return r1.ec == std::errc() && r2.ec == std::errc();
}

int index_of(std::string_view s, const char* const (&names)[2]) {
  for (int i = 0; i < 2; ++i)
    if (s == names[i]) return i;
  return -1;
}

// Reviews gathered per split and class before they are ordered, and the caps they are held to.
struct Buckets {
  explicit Buckets(const ImdbLimits& l) : limits(l) {}
  ImdbLimits limits;
  std::vector<Review> reviews[2][2];  // [split][label]
  int splits = 2;                     // 1: train only
  std::uint64_t total_bytes = 0, count = 0;

  // Throws when a review of `bytes` bytes (known before or while reading it) passes a cap.
  void check_review(const std::string& where, std::uint64_t bytes) const {
    if (bytes > limits.max_review_bytes)
      throw std::runtime_error(fmt::format("IMDb data '{}': review is {} bytes or more, above the limit of {} bytes",
                                           where, bytes, limits.max_review_bytes));
    if (total_bytes + bytes > limits.max_total_bytes)
      throw std::runtime_error(fmt::format("IMDb data '{}': the reviews hold more than the limit of {} bytes", where,
                                           limits.max_total_bytes));
  }
  void add(int split, Review&& review, const std::string& where) {
    if (count + 1 > limits.max_reviews)
      throw std::runtime_error(
          fmt::format("IMDb data '{}': more than the limit of {} reviews", where, limits.max_reviews));
    total_bytes += review.text.size();
    ++count;
    reviews[split][review.label].push_back(std::move(review));
  }

  ImdbData finish(const std::string& where, bool folder) {
    for (int s = 0; s < splits; ++s) {
      if (reviews[s][0].empty() && reviews[s][1].empty()) {
        if (folder)
          throw std::runtime_error(
              fmt::format("IMDb data '{}/{}' does not exist or holds no reviews", where, kSplits[s]));
        throw std::runtime_error(fmt::format("IMDb archive '{}' holds no {}/ split (no {}/neg or {}/pos reviews)",
                                             where, kSplits[s], kSplits[s], kSplits[s]));
      }
      for (int c = 0; c < 2; ++c) {
        auto& v = reviews[s][c];
        if (v.empty())
          throw std::runtime_error(
              fmt::format("IMDb data '{}': {}/{} holds no reviews", where, kSplits[s], kClasses[c]));
        std::sort(v.begin(), v.end(), [](const Review& a, const Review& b) { return a.id < b.id; });
        for (std::size_t i = 1; i < v.size(); ++i)
          if (v[i].id == v[i - 1].id)
            throw std::runtime_error(fmt::format("IMDb data '{}': review id {} appears twice in {}/{}", where, v[i].id,
                                                 kSplits[s], kClasses[c]));
      }
    }
    ImdbData data;
    for (int s = 0; s < splits; ++s) {
      auto& out = s == 0 ? data.train : data.test;
      out.reserve(reviews[s][0].size() + reviews[s][1].size());
      for (int c = 0; c < 2; ++c)
        for (auto& r : reviews[s][c]) out.push_back(std::move(r));
    }
    return data;
  }
};

// Where an archive entry goes: its split and label, or nothing when it is not a review.
struct Slot {
  int split, label;
  std::int64_t id;
  int rating;
};

std::optional<Slot> classify_entry(std::string_view path) {
  std::string_view parts[3];  // the last three components: split, class, file name
  int found = 0;
  while (found < 3 && !path.empty()) {
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    const auto slash = path.rfind('/');
    const auto part = slash == std::string_view::npos ? path : path.substr(slash + 1);
    if (part.empty()) break;
    parts[2 - found++] = part;
    path = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
  }
  if (found < 3) return std::nullopt;
  Slot slot{};
  slot.split = index_of(parts[0], kSplits);
  slot.label = index_of(parts[1], kClasses);
  if (slot.split < 0 || slot.label < 0 || !parse_review_name(parts[2], slot.id, slot.rating)) return std::nullopt;
  return slot;
}

ImdbData read_archive(const fs::path& path, int splits, const ImdbLimits& limits) {
  std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), &archive_read_free);
  if (!a) throw std::runtime_error("read_imdb: libarchive could not allocate a reader");
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  const auto fail = [&](const char* what) {
    const char* msg = archive_error_string(a.get());
    return std::runtime_error(fmt::format("IMDb archive '{}' is corrupt or unreadable ({}): {}", path.string(), what,
                                          msg ? msg : "unknown error"));
  };
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) throw fail("open");
  Buckets buckets(limits);
  buckets.splits = splits;
  std::uint64_t archive_bytes = 0;  // declared sizes of all entries, which are decompressed even when skipped
  archive_entry* entry = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) throw fail("header");
    const std::uint64_t declared = archive_entry_size_is_set(entry)
                                       ? static_cast<std::uint64_t>(std::max<la_int64_t>(0, archive_entry_size(entry)))
                                       : 0;
    archive_bytes += declared;
    if (archive_bytes > limits.max_archive_bytes)
      throw std::runtime_error(fmt::format("IMDb archive '{}' expands to more than the limit of {} bytes",
                                           path.string(), limits.max_archive_bytes));
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    const char* name = archive_entry_pathname(entry);
    const auto slot = name ? classify_entry(name) : std::nullopt;
    // The data of skipped entries is skipped by the next header read, never copied out.
    if (!slot || slot->split >= splits) continue;
    const std::string where = fmt::format("{}:{}", path.string(), clip_for_message(name));
    buckets.check_review(where, declared);  // before reading a byte of it
    Review review{std::string(), slot->label, slot->rating, slot->id};
    review.text.reserve(static_cast<std::size_t>(declared));
    char buf[1 << 14];
    for (;;) {
      const la_ssize_t n = archive_read_data(a.get(), buf, sizeof buf);
      if (n < 0) throw fail(name);
      if (n == 0) break;
      review.text.append(buf, static_cast<std::size_t>(n));
      buckets.check_review(where, review.text.size());  // an entry whose size was not declared
    }
    buckets.add(slot->split, std::move(review), where);
  }
  return buckets.finish(path.string(), /*folder=*/false);
}

std::string read_file(const fs::path& path, const Buckets& buckets) {
  std::unique_ptr<std::FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw std::runtime_error(fmt::format("IMDb review '{}' cannot be opened", path.string()));
  std::string text;
  char buf[1 << 14];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    text.append(buf, n);
    buckets.check_review(path.string(), text.size());
  }
  if (std::ferror(f.get())) throw std::runtime_error(fmt::format("IMDb review '{}' cannot be read", path.string()));
  return text;
}

ImdbData read_folder(fs::path root, int splits, const ImdbLimits& limits) {
  if (!fs::is_directory(root / "train") && !fs::is_directory(root / "test") && fs::is_directory(root / "aclImdb"))
    root /= "aclImdb";
  Buckets buckets(limits);
  buckets.splits = splits;
  for (int s = 0; s < splits; ++s) {
    const fs::path split_dir = root / kSplits[s];
    if (!fs::is_directory(split_dir))
      throw std::runtime_error(
          fmt::format("IMDb data '{}' does not exist (missing {}/ split)", split_dir.string(), kSplits[s]));
    for (int c = 0; c < 2; ++c) {
      const fs::path class_dir = split_dir / kClasses[c];
      if (!fs::is_directory(class_dir))
        throw std::runtime_error(fmt::format("IMDb data '{}' does not exist", class_dir.string()));
      for (const auto& e : fs::directory_iterator(class_dir)) {
        if (!e.is_regular_file()) continue;
        Review review{std::string(), c, 0, 0};
        if (!parse_review_name(e.path().filename().string(), review.id, review.rating)) continue;
        review.text = read_file(e.path(), buckets);
        buckets.add(s, std::move(review), e.path().string());
      }
      if (buckets.reviews[s][c].empty())
        throw std::runtime_error(fmt::format("IMDb data '{}' holds no reviews", class_dir.string()));
    }
  }
  return buckets.finish(root.string(), /*folder=*/true);
}

}  // namespace

bool looks_like_imdb(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return true;
  return fs::is_directory(path / "train", ec) || fs::is_directory(path / "test", ec) ||
         fs::is_directory(path / "aclImdb", ec);
}

ImdbData read_imdb(const fs::path& path, ImdbSplits which, const ImdbLimits& limits) {
  const int splits = which == ImdbSplits::TrainOnly ? 1 : 2;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return read_folder(path, splits, limits);
  if (!fs::exists(path, ec)) throw std::runtime_error(fmt::format("IMDb data '{}' does not exist", path.string()));
  return read_archive(path, splits, limits);
}

}  // namespace tapegrad::datasets
