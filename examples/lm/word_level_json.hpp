// train_lm's word vocabulary as a Hugging Face tokenizer.json (a WordLevel model behind a normalizer and
// a pre-tokenizer that cut text as datasets/text/tokenizer.hpp does), so that an exported run carries a
// tokenizer the ecosystem reads (tokenizers.Tokenizer.from_file, transformers' PreTrainedTokenizerFast),
// and reading it back.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tapegrad/datasets/text/vocab.hpp"

namespace lm {

// tokenizer.json of vocab. ASCII text tokenizes as train_lm's tokenizer does: lower-cased, "<br />" as a
// space, typographic quotes as ASCII ones, runs of [a-z0-9'] as words and every other character alone.
// Beyond ASCII the two differ (Hugging Face lower-cases Unicode letters and cuts characters, train_lm
// bytes); a token of one byte outside ASCII, which is no UTF-8 text, is written "<0xC3>".
nlohmann::json word_level_tokenizer_json(const tapegrad::datasets::Vocabulary& vocab);

// tokenizer_config.json for transformers' AutoTokenizer: PreTrainedTokenizerFast with <pad> and <unk>.
nlohmann::json word_level_tokenizer_config(std::size_t model_max_length);

// Whether json is a WordLevel tokenizer.json (model.type "WordLevel").
bool is_word_level(const nlohmann::json& json);

// The vocabulary of a tokenizer.json that word_level_tokenizer_json wrote. Throws std::runtime_error
// naming `where` and the problem: another normalizer or pre-tokenizer than train_lm's (which would cut
// text otherwise), ids that are not 0..n-1, <pad> and <unk> not ids 0 and 1, a token train_lm's
// tokenizer cannot produce.
tapegrad::datasets::Vocabulary vocabulary_from_tokenizer_json(const nlohmann::json& json, const std::string& where);

}  // namespace lm
