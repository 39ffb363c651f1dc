#include "examples/imdb/contrast_pairs.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <stdexcept>

namespace imdb {

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields(1);
  for (const char c : line) {
    if (c == '\t') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

std::vector<ContrastPair> read_contrast_pairs(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the contrast pairs", path.string()));
  const auto fail = [&](std::size_t line, const std::string& what) {
    throw std::runtime_error(fmt::format("{}:{}: {}", path.string(), line, what));
  };
  std::string line;
  std::size_t number = 0;
  if (!std::getline(in, line) || (++number, line != "pair\tlabel\ttext")) {
    fail(1, "expected the header line \"pair<TAB>label<TAB>text\"");
  }
  std::vector<ContrastPair> pairs;
  std::map<std::string, std::size_t> index;  // pair id -> position in pairs
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto fields = split_tabs(line);
    if (fields.size() != 3) fail(number, fmt::format("expected 3 tab-separated columns, got {}", fields.size()));
    const std::string& id = fields[0];
    const std::string& label = fields[1];
    const std::string& text = fields[2];
    if (id.empty() || text.empty()) fail(number, "empty pair id or text");
    if (label != "0" && label != "1") fail(number, fmt::format("label must be 0 or 1, got '{}'", label.substr(0, 20)));
    auto [it, fresh] = index.emplace(id, pairs.size());
    if (fresh) pairs.push_back({id, "", ""});
    std::string& slot = label == "1" ? pairs[it->second].positive : pairs[it->second].negative;
    if (!slot.empty()) fail(number, fmt::format("pair {} has a second review labelled {}", id.substr(0, 40), label));
    slot = text;
  }
  for (const auto& p : pairs) {
    if (p.positive.empty() || p.negative.empty()) {
      throw std::runtime_error(fmt::format("{}: pair {} lacks its {} review", path.string(), p.id.substr(0, 40),
                                           p.positive.empty() ? "positive" : "negative"));
    }
  }
  return pairs;
}

double contrast_pair_accuracy(const std::vector<double>& p_positive_of_positive,
                              const std::vector<double>& p_positive_of_negative) {
  if (p_positive_of_positive.size() != p_positive_of_negative.size()) {
    throw std::invalid_argument(fmt::format("contrast_pair_accuracy: {} positive but {} negative members",
                                            p_positive_of_positive.size(), p_positive_of_negative.size()));
  }
  if (p_positive_of_positive.empty()) return 0.0;
  std::size_t both = 0;
  for (std::size_t i = 0; i < p_positive_of_positive.size(); ++i) {
    both += (p_positive_of_positive[i] > 0.5 && p_positive_of_negative[i] < 0.5) ? 1 : 0;
  }
  return double(both) / double(p_positive_of_positive.size());
}

}  // namespace imdb
