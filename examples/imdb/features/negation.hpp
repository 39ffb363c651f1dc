// English negation words and the tokens that end their scope, as datasets' tokenizer spells them, for
// NegationScope: which of a vocabulary's ids open a negation's scope and which close it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tapegrad/datasets/text/vocab.hpp"

namespace imdb::features {

// True for "not", "no", "never", "nothing", "none", "nobody", "nowhere", "neither", "nor", "cannot",
// "without", "hardly", any token ending in "n't" ("don't", "isn't", "couldn't", ...), and the forms
// written without the apostrophe: "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent",
// "cant", "couldnt", "wouldnt", "shouldnt", "wont", "aint", "havent", "hasnt", "hadnt".
bool is_negator(std::string_view token);

// True for the clause-level punctuation tokens ".", ",", ";", ":", "!", "?", "(", ")" and the
// word "but", after which a negation no longer applies ("not bad, but dull").
bool ends_negation_scope(std::string_view token);

// The ids of vocab's tokens for which is_negator holds, ascending.
std::vector<std::int64_t> negator_ids(const tapegrad::datasets::Vocabulary& vocab);
// The ids of vocab's tokens for which ends_negation_scope holds, ascending.
std::vector<std::int64_t> scope_end_ids(const tapegrad::datasets::Vocabulary& vocab);

}  // namespace imdb::features
