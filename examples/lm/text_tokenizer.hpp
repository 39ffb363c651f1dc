// The tokenizer of a model folder, whichever kind it is: train_lm's words (vocab.txt, or tokenizer.json
// with a WordLevel model), GPT-2's byte-level BPE (tokenizer.json or vocab.json + merges.txt) or
// SentencePiece (tokenizer.model).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/datasets/text/vocab.hpp"

namespace lm {

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  virtual std::vector<std::int64_t> encode(std::string_view text) const = 0;
  virtual std::string decode(const std::vector<std::int64_t>& ids) const = 0;
  // One more than the largest id.
  virtual std::size_t vocab_size() const = 0;
  // Whether tokens are written apart, a space between two (train_lm's words), rather than holding
  // their own spaces (subwords).
  virtual bool spaced() const { return false; }
  // "tokenizer.json (WordLevel, 2000 tokens)": what was read.
  virtual std::string description() const = 0;
  // The word vocabulary of train_lm's tokenizer, or null for a subword tokenizer.
  virtual const tapegrad::datasets::Vocabulary* words() const { return nullptr; }
};

// train_lm's tokenizer over vocab.
std::shared_ptr<const TextTokenizer> word_tokenizer(const tapegrad::datasets::Vocabulary& vocab,
                                                    std::string description);

// The files of a model folder, in this order: tokenizer.json (WordLevel or byte-level BPE),
// tokenizer.model (SentencePiece), vocab.json + merges.txt (GPT-2), vocab.txt (a train_lm run). Throws
// std::runtime_error naming the folder when it has none of them, or the file and its problem.
std::shared_ptr<const TextTokenizer> load_tokenizer(const std::filesystem::path& dir);

// The files load_tokenizer reads that dir holds, to copy along with the weights (with
// tokenizer_config.json and special_tokens_map.json where present).
std::vector<std::filesystem::path> tokenizer_files(const std::filesystem::path& dir);

}  // namespace lm
