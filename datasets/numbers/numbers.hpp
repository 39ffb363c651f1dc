/// @file
/// The numbers translation task: integers 0..999,999,999 in English words <-> digits, generated in
/// code from a seed, with train / validation / test sets disjoint by number value.
///
/// Wording (British, no commas):
/// - 0 is "zero"; 1..19 are one, two, ..., nineteen; tens are twenty, thirty, forty, fifty, sixty,
///   seventy, eighty, ninety, joined to a unit by a hyphen: "forty-two".
/// - A group of three digits h t u reads "<h> hundred" when h > 0, then "and <tu>" when tu > 0:
///   101 "one hundred and one", 110 "one hundred and ten", 300 "three hundred".
/// - The number is read as groups of millions, thousands and units, each non-zero group followed by
///   "million" / "thousand" (none for units), separated by single spaces.
/// - The British "and": when the units group is 1..99 and a higher group is present, it is preceded
///   by "and": 1001 "one thousand and one", 2000042 "two million and forty-two"; but 1100 is "one
///   thousand one hundred" and 1000100 "one million one hundred".
///
/// Tokens: one shared vocabulary of 47 tokens (number_tokens()): `<pad>` 0, `<bos>` 1, `<eos>` 2, `<unk>` 3,
/// the digits "0".."9", the 32 words (zero..nineteen, the eight tens, hundred, thousand, million,
/// and) and "-". The digit side is tokenized by character, the word side
/// by word, with the hyphen its own token ("forty-two" -> forty - two): 9 digit tokens and at most 20
/// word tokens per number, and every token a model must produce is a whole word.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/autograd/generator.hpp"

namespace tapegrad::datasets {

/// The largest number of the task.
inline constexpr std::uint64_t kMaxNumber = 999'999'999;

/// Throws std::invalid_argument for n > kMaxNumber.
std::string number_to_words(std::uint64_t n);

/// The set a number value belongs to.
enum class NumberSplit { Train, Valid, Test };

/// Which set a value belongs to: a hash of (value, seed) puts 5% of all values in validation, 5% in
/// test and the rest in train, so the sets are disjoint by construction for a given seed.
NumberSplit number_split(std::uint64_t value, std::uint64_t seed);

/// One draw: a digit count 1..9 uniformly (one digit: 0..9), then, with probability 1/2 each,
/// - a value with that many digits, uniformly, or
/// - a "round" value: a zero rate z uniform in [0, 1), the leading digit uniform in 1..9 and every
///   other digit 0 with probability z, else uniform in 1..9 (1000, 2000042, 300300300).
/// Round numbers are what people write most, and a uniform value has k given zero digits only once
/// in 10^k draws: models trained on uniform draws alone wrote 1000 as "one thousand and".
std::uint64_t draw_number(Generator& gen);
/// Draws until the value belongs to `split`. train_translate draws its training numbers this way,
/// afresh for every batch, so each value recurs as often as the distribution makes it: round numbers
/// such as 7000000 far more often than any one uniform value.
std::uint64_t draw_number(Generator& gen, NumberSplit split, std::uint64_t seed);

/// The three sets of distinct numbers make_numbers_dataset() draws.
struct NumbersDataset {
  std::vector<std::uint64_t> train, valid, test;  ///< distinct values within and across the sets
};

/// Each set holds distinct values of its split, drawn in order with draw_number(gen, split, seed),
/// skipping values already drawn; short numbers are thus common until each set has all of its own.
/// Deterministic in (sizes, seed). Throws std::invalid_argument if a size cannot be reached (more
/// than a split's share of all numbers).
NumbersDataset make_numbers_dataset(std::size_t train_size, std::size_t valid_size, std::size_t test_size,
                                    std::uint64_t seed);

/// The shared vocabulary: its special ids and all of its tokens in id order.
///@{
inline constexpr std::int64_t kNumberPad = 0, kNumberBos = 1, kNumberEos = 2, kNumberUnk = 3;
const std::vector<std::string>& number_tokens();
///@}
std::int64_t number_token_id(std::string_view token);  ///< kNumberUnk for an unknown token

/// Text -> ids (no bos/eos). Words: lower-cased, split on whitespace and around '-'. Digits: one id
/// per character, ignoring whitespace and ',' separators. Anything unknown becomes kNumberUnk.
///@{
std::vector<std::int64_t> encode_words(std::string_view text);
std::vector<std::int64_t> encode_digits(std::string_view text);
///@}
/// Ids -> text: words joined by spaces except around "-"; digits concatenated. Special tokens are
/// skipped except `<unk>`, written as `"<unk>"`.
///@{
std::string decode_words(const std::vector<std::int64_t>& ids);
std::string decode_digits(const std::vector<std::int64_t>& ids);
///@}

}  // namespace tapegrad::datasets
