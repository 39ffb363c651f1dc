// Contrast pairs: two short reviews that share most of their words but not their sentiment ("not a
// single wasted scene" / "not a single memorable scene"), for checking that a classifier reads word
// order and negation rather than a bag of words.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace imdb {

// One pair: the same words, or nearly, with opposite sentiment.
struct ContrastPair {
  std::string id;        // the "pair" column
  std::string positive;  // the review labelled 1
  std::string negative;  // the review labelled 0
};

// Reads a tab-separated file with the header line "pair<TAB>label<TAB>text" and then two lines per
// pair (in any order): the same pair id, labels 1 and 0, and a non-empty text without tabs.
// Throws std::runtime_error naming the file and the line for anything else (a missing or duplicate
// member, an unknown label, a wrong number of columns, an unreadable file).
std::vector<ContrastPair> read_contrast_pairs(const std::filesystem::path& path);

// The share of pairs whose two members are both classified right, given P(positive) of every
// pair's positive and negative member (same order as the pairs) and a 0.5 threshold.
double contrast_pair_accuracy(const std::vector<double>& p_positive_of_positive,
                              const std::vector<double>& p_positive_of_negative);

}  // namespace imdb
