#include "examples/lm/text_tokenizer.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "examples/lm/word_level_json.hpp"
#include "tapegrad/datasets/tokenizers/byte_level_bpe.hpp"
#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"
#include "tapegrad/io/json.hpp"

namespace lm {

namespace fs = std::filesystem;
namespace ds = tapegrad::datasets;
namespace tk = tapegrad::datasets::tokenizers;

namespace {

class Words final : public TextTokenizer {
 public:
  Words(ds::Vocabulary vocab, std::string description)
      : vocab_(std::move(vocab)), description_(std::move(description)) {}
  std::vector<std::int64_t> encode(std::string_view text) const override { return vocab_.encode(text); }
  std::string decode(const std::vector<std::int64_t>& ids) const override {
    std::string text;
    for (std::size_t i = 0; i < ids.size(); ++i) text += (i ? " " : "") + vocab_.token(ids[i]);
    return text;
  }
  std::size_t vocab_size() const override { return vocab_.size(); }
  bool spaced() const override { return true; }
  std::string description() const override { return description_; }
  const ds::Vocabulary* words() const override { return &vocab_; }

 private:
  ds::Vocabulary vocab_;
  std::string description_;
};

class Bpe final : public TextTokenizer {
 public:
  Bpe(tk::ByteLevelBPE bpe, std::string description) : bpe_(std::move(bpe)), description_(std::move(description)) {}
  std::vector<std::int64_t> encode(std::string_view text) const override { return bpe_.encode(text); }
  std::string decode(const std::vector<std::int64_t>& ids) const override { return bpe_.decode(ids); }
  std::size_t vocab_size() const override { return bpe_.vocab_size(); }
  std::string description() const override { return description_; }

 private:
  tk::ByteLevelBPE bpe_;
  std::string description_;
};

class Pieces final : public TextTokenizer {
 public:
  explicit Pieces(tk::SentencePiece sp) : sp_(std::move(sp)) {}
  // As transformers' LlamaTokenizer: BOS first, when the model has one.
  std::vector<std::int64_t> encode(std::string_view text) const override {
    std::vector<std::int64_t> ids = sp_.encode(text);
    if (sp_.bos_id() >= 0) ids.insert(ids.begin(), sp_.bos_id());
    return ids;
  }
  std::string decode(const std::vector<std::int64_t>& ids) const override { return sp_.decode(ids); }
  std::size_t vocab_size() const override { return sp_.vocab_size(); }
  std::string description() const override {
    return fmt::format("tokenizer.model (SentencePiece, {} pieces)", sp_.vocab_size());
  }

 private:
  tk::SentencePiece sp_;
};

}  // namespace

std::shared_ptr<const TextTokenizer> word_tokenizer(const ds::Vocabulary& vocab, std::string description) {
  return std::make_shared<Words>(vocab, std::move(description));
}

std::shared_ptr<const TextTokenizer> load_tokenizer(const fs::path& dir) {
  if (const fs::path path = dir / "tokenizer.json"; fs::exists(path)) {
    const nlohmann::json json = tapegrad::io::read_json_file(path);
    if (is_word_level(json)) {
      const ds::Vocabulary vocab = vocabulary_from_tokenizer_json(json, path.string());
      return word_tokenizer(vocab, fmt::format("tokenizer.json (WordLevel, {} tokens)", vocab.size()));
    }
    tk::ByteLevelBPE bpe = tk::ByteLevelBPE::from_tokenizer_json(path);
    const std::size_t n = bpe.vocab_size();
    return std::make_shared<Bpe>(std::move(bpe), fmt::format("tokenizer.json (byte-level BPE, {} tokens)", n));
  }
  if (const fs::path path = dir / "tokenizer.model"; fs::exists(path)) {
    return std::make_shared<Pieces>(tk::SentencePiece::load(path));
  }
  if (fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt")) {
    tk::ByteLevelBPE bpe = tk::ByteLevelBPE::from_pretrained(dir);
    const std::size_t n = bpe.vocab_size();
    return std::make_shared<Bpe>(std::move(bpe), fmt::format("vocab.json + merges.txt (byte-level BPE, {} tokens)", n));
  }
  if (const fs::path path = dir / "vocab.txt"; fs::exists(path)) {
    const ds::Vocabulary vocab = ds::Vocabulary::load(path);
    return word_tokenizer(vocab, fmt::format("vocab.txt ({} words)", vocab.size()));
  }
  throw std::runtime_error(
      fmt::format("{}: has no tokenizer: none of tokenizer.json, tokenizer.model, vocab.json + merges.txt, vocab.txt",
                  dir.string()));
}

std::vector<fs::path> tokenizer_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const char* name : {"tokenizer.json", "tokenizer.model", "vocab.json", "merges.txt", "tokenizer_config.json",
                           "special_tokens_map.json"}) {
    if (fs::exists(dir / name)) files.push_back(dir / name);
  }
  return files;
}

}  // namespace lm
