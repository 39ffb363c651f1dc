#include "examples/imdb/features/negation.hpp"

#include <algorithm>
#include <array>

namespace imdb::features {

using tapegrad::datasets::Vocabulary;

namespace {
constexpr std::array<std::string_view, 28> kNegators = {
    "not",     "no",      "never",    "nothing", "none",  "nobody", "nowhere", "neither", "nor",    "cannot",
    "without", "hardly",  "dont",     "doesnt",  "didnt", "isnt",   "arent",   "wasnt",   "werent", "cant",
    "couldnt", "wouldnt", "shouldnt", "wont",    "aint",  "havent", "hasnt",   "hadnt"};
constexpr std::array<std::string_view, 9> kScopeEnds = {".", ",", ";", ":", "!", "?", "(", ")", "but"};

template <typename Predicate>
std::vector<std::int64_t> ids_where(const Vocabulary& vocab, Predicate&& keep) {
  std::vector<std::int64_t> ids;
  for (std::size_t id = 0; id < vocab.size(); ++id) {
    if (keep(vocab.token(static_cast<std::int64_t>(id)))) ids.push_back(static_cast<std::int64_t>(id));
  }
  return ids;
}
}  // namespace

bool is_negator(std::string_view token) {
  constexpr std::string_view suffix = "n't";
  if (token.size() >= suffix.size() && token.substr(token.size() - suffix.size()) == suffix) return true;
  return std::find(kNegators.begin(), kNegators.end(), token) != kNegators.end();
}

bool ends_negation_scope(std::string_view token) {
  return std::find(kScopeEnds.begin(), kScopeEnds.end(), token) != kScopeEnds.end();
}

std::vector<std::int64_t> negator_ids(const Vocabulary& vocab) {
  return ids_where(vocab, [](std::string_view t) { return is_negator(t); });
}

std::vector<std::int64_t> scope_end_ids(const Vocabulary& vocab) {
  return ids_where(vocab, [](std::string_view t) { return ends_negation_scope(t); });
}

}  // namespace imdb::features
