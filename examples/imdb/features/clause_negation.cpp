#include "examples/imdb/features/clause_negation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "examples/imdb/features/negation.hpp"
#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace imdb::features {

using tapegrad::format_shape;
using tapegrad::Generator;
using tapegrad::shape_of;
using tapegrad::datasets::Vocabulary;

namespace {
// "is", "are", "was", "were", "am" and the auxiliaries take the negation after them ("would not
// recommend"); "be" and "been" before ("will not be", "has not been"). Not "have": "have not a great time".
constexpr std::array<std::string_view, 16> kCopulasAfter = {"is",    "are", "was",   "were",   "am",   "will",
                                                            "would", "can", "could", "should", "must", "might",
                                                            "may",   "do",  "does",  "did"};
constexpr std::array<std::string_view, 2> kCopulasBefore = {"be", "been"};
// What may stand between the copula and the polar word: "was a truly great film".
// Not "just" or "simply": "not just terrible" is still terrible.
constexpr std::array<std::string_view, 19> kModifiers = {
    "a",     "an",         "the",    "so",     "very",   "really",     "quite",   "pretty", "too", "extremely",
    "truly", "absolutely", "always", "rather", "fairly", "incredibly", "totally", "most",   "such"};
constexpr std::array<std::string_view, 3> kSentenceEnds = {".", "!", "?"};
constexpr std::size_t kMaxModifiers = 2;
// How much of the clause a rewritten row keeps around its copula and its polar word.
constexpr std::size_t kBeforeCopula = 5, kAfterWord = 6;

template <std::size_t N>
bool among(const std::array<std::string_view, N>& words, std::string_view token) {
  return std::find(words.begin(), words.end(), token) != words.end();
}
}  // namespace

ClauseNegation::ClauseNegation(const Vocabulary& vocab, std::vector<double> polarity, ClauseNegationOptions options)
    : polarity_(std::move(polarity)), options_(options) {
  if (polarity_.size() != vocab.size()) {
    throw std::invalid_argument(
        fmt::format("ClauseNegation: {} polarities for a vocabulary of {} tokens", polarity_.size(), vocab.size()));
  }
  if (!(options_.p >= 0.0 && options_.p <= 1.0)) {
    throw std::invalid_argument(fmt::format("ClauseNegation: p must be in [0, 1], got {}", options_.p));
  }
  if (!(options_.polarity_margin > 0.0)) {
    throw std::invalid_argument(
        fmt::format("ClauseNegation: polarity_margin must be > 0, got {}", options_.polarity_margin));
  }
  if (!can_negate(vocab)) throw std::invalid_argument("ClauseNegation: the vocabulary has no \"not\"");
  not_id_ = vocab.id("not");
  never_id_ = vocab.id("never");
  if (never_id_ == Vocabulary::unk_id) never_id_ = not_id_;
  // The subject's negations, each only if the vocabulary holds all of its words.
  const auto ids_of = [&vocab](std::initializer_list<std::string_view> words) {
    std::vector<std::int64_t> out;
    for (std::string_view w : words) {
      const std::int64_t id = vocab.id(w);
      if (id == Vocabulary::unk_id) return std::vector<std::int64_t>{};
      out.push_back(id);
    }
    return out;
  };
  no_ = ids_of({"no"});
  none_of_the_ = ids_of({"none", "of", "the"});
  nothing_about_ = ids_of({"nothing", "about"});
  const auto id_or_none = [&vocab](std::string_view w) {  // -1, which no token has, when absent
    const std::int64_t id = vocab.id(w);
    return id == Vocabulary::unk_id ? std::int64_t{-1} : id;
  };
  the_id_ = id_or_none("the");
  this_id_ = id_or_none("this");
  it_id_ = id_or_none("it");
  roles_.assign(vocab.size(), Role::other);
  for (std::size_t id = 0; id < vocab.size(); ++id) {
    const std::string& t = vocab.token(static_cast<std::int64_t>(id));
    Role& role = roles_[id];
    if (among(kSentenceEnds, t))
      role = Role::sentence_end;
    else if (ends_negation_scope(t))
      role = Role::clause_end;
    else if (is_negator(t))
      role = Role::negator;
    else if (among(kCopulasAfter, t))
      role = Role::copula_after;
    else if (among(kCopulasBefore, t))
      role = Role::copula_before;
    else if (among(kModifiers, t))
      role = Role::modifier;
  }
}

bool ClauseNegation::can_negate(const Vocabulary& vocab) { return vocab.id("not") != Vocabulary::unk_id; }

std::size_t ClauseNegation::polar_words() const {
  return static_cast<std::size_t>(std::count_if(polarity_.begin(), polarity_.end(),
                                                [&](double r) { return std::abs(r) >= options_.polarity_margin; }));
}

double ClauseNegation::polarity(std::int64_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < polarity_.size() ? polarity_[static_cast<std::size_t>(id)] : 0.0;
}

ClauseNegation::Role ClauseNegation::role(std::int64_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < roles_.size() ? roles_[static_cast<std::size_t>(id)] : Role::other;
}

void ClauseNegation::find_pieces(const std::int64_t* id, std::size_t real, double sign,
                                 std::vector<Piece>& pieces) const {
  pieces.clear();
  for (std::size_t begin = 0; begin < real;) {
    std::size_t end = begin;
    bool negated = false;
    while (end < real && role(id[end]) != Role::clause_end && role(id[end]) != Role::sentence_end) {
      negated |= role(id[end]) == Role::negator;
      ++end;
    }
    for (std::size_t c = begin; c < end && !negated; ++c) {
      const Role cr = role(id[c]);
      if (cr != Role::copula_after && cr != Role::copula_before) continue;
      std::size_t w = c + 1;
      while (w < end && w - c - 1 < kMaxModifiers && role(id[w]) == Role::modifier) ++w;
      if (w >= end || sign * polarity(id[w]) < options_.polarity_margin) continue;
      // The piece kept: the polar word must be its only one, or the flipped label would be a guess.
      const std::size_t first = c - std::min(c - begin, kBeforeCopula);
      const std::size_t last = std::min(end, w + 1 + kAfterWord);
      bool alone = true;
      for (std::size_t t = first; t < last && alone; ++t) {
        alone = t == w || std::abs(polarity(id[t])) < options_.polarity_margin;
      }
      if (alone) pieces.push_back({first, c, last});
    }
    begin = end + 1;
  }
}

// The subject negated instead of the verb, a quarter of the time where the clause allows it: "the acting
// was superb" -> "no acting was superb" / "none of the acting was superb", "it was superb" -> "nothing
// about it was superb".
const std::vector<std::int64_t>* ClauseNegation::subject_negation(const std::int64_t* id, const Piece& piece,
                                                                  double never_draw, std::size_t& subject) const {
  const auto [first, copula, last] = piece;
  subject = copula;  // none
  if (never_draw < 0.25 || never_draw >= 0.5) return nullptr;
  const std::int64_t before = copula > first ? id[copula - 1] : Vocabulary::unk_id;
  if ((before == it_id_ || before == this_id_) && !nothing_about_.empty()) {
    subject = copula - 1;
    return &nothing_about_;
  }
  // A determiner one to three words before the copula, only plain words between.
  for (std::size_t s = copula; s > first + 1 && copula - s < 3 && subject == copula; --s) {
    if (role(id[s - 1]) != Role::other) break;
    if (id[s - 2] == the_id_ || id[s - 2] == this_id_) subject = s - 2;
  }
  if (subject == copula) return nullptr;
  const std::vector<std::int64_t>* words = never_draw < 0.375 || none_of_the_.empty() ? &no_ : &none_of_the_;
  if (words->empty()) {
    subject = copula;
    return nullptr;
  }
  return words;
}

void ClauseNegation::rewrite(const std::int64_t* id, const Piece& piece, std::size_t real, bool negate,
                             double never_draw, std::vector<std::int64_t>& text) const {
  std::size_t subject = piece.copula;
  const std::vector<std::int64_t>* subject_words = negate ? subject_negation(id, piece, never_draw, subject) : nullptr;
  const std::int64_t negation = never_draw < 0.25 ? never_id_ : not_id_;
  text.clear();
  for (std::size_t t = piece.first; t < piece.last; ++t) {
    if (subject_words && t == subject) {
      text.insert(text.end(), subject_words->begin(), subject_words->end());
      if (subject_words == &nothing_about_) text.push_back(id[t]);  // "nothing about it"
      continue;
    }
    const bool verb_negated = negate && !subject_words && t == piece.copula;
    if (verb_negated && role(id[t]) == Role::copula_before) text.push_back(negation);
    text.push_back(id[t]);
    if (verb_negated && role(id[t]) == Role::copula_after) text.push_back(negation);
  }
  if (piece.last < real && role(id[piece.last]) == Role::sentence_end) text.push_back(id[piece.last]);
}

std::size_t ClauseNegation::apply(xt::xarray<std::int64_t>& ids, xt::xarray<bool>& padding_mask,
                                  xt::xarray<std::int64_t>& labels, std::int64_t pad_id, std::uint64_t seed,
                                  std::uint64_t step) const {
  if (ids.shape() != padding_mask.shape() || ids.dimension() != 2 || labels.dimension() != 1 ||
      labels.shape(0) != ids.shape(0)) {
    throw std::invalid_argument(fmt::format(
        "ClauseNegation::apply: ids {} and padding_mask {} must share one [B, L] shape, labels {} must be [B]",
        format_shape(shape_of(ids)), format_shape(shape_of(padding_mask)), format_shape(shape_of(labels))));
  }
  if (options_.p == 0.0) return 0;
  // Its own stream ("negate" in ASCII), apart from word dropout's and the crops' for the same (seed, step).
  Generator gen(seed ^ 0x6e6567617465ULL ^ (0x9E3779B97F4A7C15ULL * (step + 1)));
  const std::size_t rows = ids.shape(0), cols = ids.shape(1);
  std::size_t rewritten = 0;
  std::vector<Piece> pieces;
  std::vector<std::int64_t> text;
  for (std::size_t r = 0; r < rows; ++r) {
    // Four draws per row whether or not it is rewritten, so that one row's fate does not shift the next's.
    const bool chosen = gen.uniform() < options_.p;
    const double which = gen.uniform(), negate_draw = gen.uniform(), never_draw = gen.uniform();
    const std::int64_t label = labels(r);
    if (!chosen || (label != 0 && label != 1)) continue;
    std::int64_t* id = ids.data() + r * cols;
    bool* pad = padding_mask.data() + r * cols;
    const std::size_t real = static_cast<std::size_t>(std::find(pad, pad + cols, true) - pad);
    find_pieces(id, real, label == 1 ? 1.0 : -1.0, pieces);
    if (pieces.empty()) continue;
    const Piece& piece =
        pieces[std::min(pieces.size() - 1, static_cast<std::size_t>(which * static_cast<double>(pieces.size())))];
    const bool negate = negate_draw < 0.5;
    rewrite(id, piece, real, negate, never_draw, text);
    if (text.size() > cols) continue;
    std::copy(text.begin(), text.end(), id);
    std::fill(id + text.size(), id + cols, pad_id);
    std::fill(pad, pad + text.size(), false);
    std::fill(pad + text.size(), pad + cols, true);
    if (negate) labels(r) = 1 - label;
    ++rewritten;
  }
  return rewritten;
}

}  // namespace imdb::features
