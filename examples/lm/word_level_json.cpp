#include "examples/lm/word_level_json.hpp"

#include <fmt/format.h>

#include <map>
#include <stdexcept>
#include <vector>

namespace lm {

namespace ds = tapegrad::datasets;
using nlohmann::json;

namespace {

json replace(const std::string& from, const std::string& to) {
  return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

// The rules of datasets/text/tokenizer.hpp in the order it applies them: lower-casing, "<br />", quotes.
json normalizer() {
  json steps = json::array({{{"type", "Lowercase"}}, replace("<br />", " ")});
  for (const char* quote : {"\u2018", "\u2019", "\u00b4", "\u0091", "\u0092", "`"})
    steps.push_back(replace(quote, "'"));
  for (const char* quote : {"\u201c", "\u201d", "\u0093", "\u0094"}) steps.push_back(replace(quote, "\""));
  return {{"type", "Sequence"}, {"normalizers", steps}};
}

// Whitespace drops out, then each word run and each other character is a token.
json pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers", json::array({{{"type", "WhitespaceSplit"}},
                                         {{"type", "Split"},
                                          {"pattern", {{"Regex", "[a-z0-9']+|[^a-z0-9']"}}},
                                          {"behavior", "Isolated"},
                                          {"invert", false}}})}};
}

json special(std::int64_t id, std::string_view content) {
  return {{"id", id},
          {"content", std::string(content)},
          {"single_word", false},
          {"lstrip", false},
          {"rstrip", false},
          {"normalized", false},
          {"special", true}};
}

// A token of one byte outside ASCII is no UTF-8 text: it is written as SentencePiece writes a byte.
std::string spelled(const std::string& token) {
  if (token.size() == 1 && static_cast<unsigned char>(token[0]) >= 0x80) {
    return fmt::format("<0x{:02X}>", static_cast<unsigned char>(token[0]));
  }
  return token;
}

std::string unspelled(const std::string& token) {
  if (token.size() == 6 && token.rfind("<0x", 0) == 0 && token[5] == '>') {
    const int value = std::stoi(token.substr(3, 2), nullptr, 16);
    if (value >= 0x80) return std::string(1, static_cast<char>(value));
  }
  return token;
}

}  // namespace

json word_level_tokenizer_json(const ds::Vocabulary& vocab) {
  json ids = json::object();
  for (std::size_t i = 0; i < vocab.size(); ++i) ids[spelled(vocab.token(static_cast<std::int64_t>(i)))] = i;
  json added = json::array({special(ds::Vocabulary::pad_id, ds::Vocabulary::pad_token),
                            special(ds::Vocabulary::unk_id, ds::Vocabulary::unk_token)});
  if (vocab.has_mask_token()) added.push_back(special(vocab.mask_id(), ds::Vocabulary::mask_token));
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", normalizer()},
          {"pre_tokenizer", pre_tokenizer()},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "WordLevel"}, {"vocab", ids}, {"unk_token", std::string(ds::Vocabulary::unk_token)}}}};
}

json word_level_tokenizer_config(std::size_t model_max_length) {
  return {{"tokenizer_class", "PreTrainedTokenizerFast"},
          {"pad_token", std::string(ds::Vocabulary::pad_token)},
          {"unk_token", std::string(ds::Vocabulary::unk_token)},
          {"model_max_length", model_max_length},
          {"clean_up_tokenization_spaces", false}};
}

bool is_word_level(const json& j) {
  return j.is_object() && j.contains("model") && j["model"].is_object() && j["model"].value("type", "") == "WordLevel";
}

ds::Vocabulary vocabulary_from_tokenizer_json(const json& j, const std::string& where) {
  if (!is_word_level(j)) throw std::runtime_error(fmt::format("{}: is not a WordLevel tokenizer.json", where));
  for (const auto& [key, expected] :
       {std::pair{"normalizer", normalizer()}, std::pair{"pre_tokenizer", pre_tokenizer()}}) {
    if (!j.contains(key) || j[key] != expected) {
      throw std::runtime_error(
          fmt::format("{}: its {} is not train_lm's (lower-casing, <br /> and quotes; words of [a-z0-9'] and single "
                      "characters): a WordLevel tokenizer that cuts text otherwise is not supported by tapegrad",
                      where, key));
    }
  }
  const json& vocab = j["model"]["vocab"];
  if (!vocab.is_object() || vocab.empty()) {
    throw std::runtime_error(fmt::format("{}: model.vocab must be a non-empty object of token: id", where));
  }
  std::vector<std::string> tokens(vocab.size());
  std::vector<bool> seen(vocab.size(), false);
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_unsigned() || id.get<std::uint64_t>() >= vocab.size() || seen[id.get<std::size_t>()]) {
      throw std::runtime_error(fmt::format("{}: model.vocab[\"{}\"] = {}: the ids must be 0 .. {}, each once", where,
                                           token, id.dump(), vocab.size() - 1));
    }
    seen[id.get<std::size_t>()] = true;
    tokens[id.get<std::size_t>()] = unspelled(token);
  }
  try {
    return ds::Vocabulary::from_tokens(std::move(tokens));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
  }
}

}  // namespace lm
