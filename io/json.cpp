#include "tapegrad/io/json.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

#include "tapegrad/autograd/messages.hpp"

namespace tapegrad::io {

namespace {

// A first pass over the text that builds nothing: it checks the nesting and counts the top level's
// entries, so that a refused text costs no memory and the value is then built by nlohmann's plain
// parser. (Its callback parser, the other way to bound the nesting, rescans a whole object each time
// one of its members ends: quadratic in the number of members.)
class Limits : public nlohmann::json::json_sax_t {
 public:
  explicit Limits(int max_depth) : max_depth_(max_depth) {}

  std::optional<std::string> problem;  // set when the pass stopped
  std::size_t top_entries = 0;         // members of the outermost object or array

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t&) override {
    if (open_ == 1) ++top_entries;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // Syntax errors and numbers beyond double's range.
    problem = fmt::format("is not valid JSON: {}", clip_for_message(e.what(), 200));
    return false;
  }

 private:
  bool value() {
    if (open_ == 1 && top_is_array_) ++top_entries;
    return true;
  }
  bool open(bool array) {
    if (open_ >= max_depth_) {
      problem = fmt::format("nests arrays or objects deeper than {} levels", max_depth_);
      return false;
    }
    value();
    if (open_ == 0) top_is_array_ = array;
    ++open_;
    return true;
  }
  bool close() {
    --open_;
    return true;
  }

  int max_depth_;
  int open_ = 0;
  bool top_is_array_ = false;
};

}  // namespace

nlohmann::json parse_json(std::string_view text, int max_depth, std::size_t max_entries) {
  Limits limits(max_depth);
  try {
    nlohmann::json::sax_parse(text, &limits);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("is not valid JSON: {}", clip_for_message(e.what(), 200)));
  }
  if (limits.problem) throw std::runtime_error(*limits.problem);
  if (limits.top_entries > max_entries) {
    throw std::runtime_error(fmt::format("has {} entries, more than the limit of {}", limits.top_entries, max_entries));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // the first pass accepted it; kept for safety
    throw std::runtime_error(fmt::format("is not valid JSON: {}", clip_for_message(e.what(), 200)));
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open for reading", path.string()));
  const std::string text(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) throw std::runtime_error(fmt::format("{}: cannot read", path.string()));
  try {
    return parse_json(text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
  }
}

}  // namespace tapegrad::io
