// The pretrained tokenizers (datasets/tokenizers/): GPT-2's byte-level BPE against js-tiktoken's ids and
// SentencePiece against the sentencepiece library's, from tests/fixtures/tokenizers.tar.xz
// (make_tokenizer_archive.sh), which CMake unpacks into the build folder; the Unicode pieces and the
// pre-tokenizer against hand-derived answers; the errors of every reader.
#include <nlohmann/json.hpp>
#include <random>

#include "tapegrad/datasets/tokenizers/byte_level_bpe.hpp"
#include "tapegrad/datasets/tokenizers/bytes_to_unicode.hpp"
#include "tapegrad/datasets/tokenizers/gpt2_pretokenizer.hpp"
#include "tapegrad/datasets/tokenizers/protobuf_reader.hpp"
#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"
#include "tapegrad/datasets/tokenizers/unicode.hpp"
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets::tokenizers;
using namespace tapegrad::testing::datasets_data;
using nlohmann::json;
using tapegrad::testing::TempDir;
using Ids = std::vector<std::int64_t>;

namespace {

const fs::path kFixtures = TAPEGRAD_TOKENIZER_FIXTURES_DIR;

std::vector<json> read_jsonl(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<json> rows;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  REQUIRE(!rows.empty());
  return rows;
}

std::string unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::string case_text(const json& row) {
  return row.contains("hex") ? unhex(row["hex"].get<std::string>()) : row["text"].get<std::string>();
}

const ByteLevelBPE& gpt2() {
  static const ByteLevelBPE bpe =
      ByteLevelBPE::from_files(kFixtures / "gpt2" / "vocab.json", kFixtures / "gpt2" / "merges.txt", {"<|endoftext|>"});
  return bpe;
}

std::string invalid_argument_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument thrown)";
}

// GPT-2's files as a Hugging Face tokenizer.json, its merges "a b" strings or [a, b] pairs.
json gpt2_tokenizer_json(bool pair_merges) {
  json vocab = json::parse(read_bytes(kFixtures / "gpt2" / "vocab.json"));
  json merges = json::array();
  std::istringstream lines(read_bytes(kFixtures / "gpt2" / "merges.txt"));
  std::string line;
  std::getline(lines, line);  // #version
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto space = line.find(' ');
    if (pair_merges)
      merges.push_back(json::array({line.substr(0, space), line.substr(space + 1)}));
    else
      merges.push_back(line);
  }
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", json::array({{{"id", 50256},
                                         {"content", "<|endoftext|>"},
                                         {"single_word", false},
                                         {"lstrip", false},
                                         {"rstrip", false},
                                         {"normalized", true},
                                         {"special", true}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
          {"post_processor",
           {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

}  // namespace

TEST_CASE("tokenizers: UTF-8 decoding is strict and the Unicode classes follow the tables", "[tokenizers]") {
  const auto at = [](std::string_view s) { return decode_utf8(s, 0); };
  CHECK(at("A").value == U'A');
  CHECK(at("\xC3\xA9").value == 0xE9);
  CHECK(at("\xC3\xA9").length == 2);
  CHECK(at("\xF0\x9F\x98\x80").value == 0x1F600);
  for (const std::string_view bad :
       {"\xC3", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "\xFF"}) {
    CAPTURE(bad);
    CHECK_FALSE(at(bad).valid);
    CHECK(at(bad).length == 1);
  }
  CHECK(is_letter(U'a'));
  CHECK(is_letter(0xE9));    // é
  CHECK(is_letter(0x4E2D));  // 中
  CHECK(is_letter(0x02B0));  // ʰ, Lm
  CHECK_FALSE(is_letter(U'1'));
  CHECK_FALSE(is_letter(0x0301));  // a combining accent is Mn, not a letter
  CHECK(is_number(0x0663));        // Arabic-Indic three, Nd
  CHECK(is_number(0x00BD));        // ½, No
  CHECK(is_number(0x2167));        // Ⅷ, Nl
  CHECK_FALSE(is_number(U'x'));
  CHECK(is_whitespace(0x85));
  CHECK(is_whitespace(0x3000));
  CHECK_FALSE(is_whitespace(0xFEFF));
  CHECK_FALSE(is_whitespace(0x1C));
  CHECK(unicode_tables_version() == "14.0.0");
}

TEST_CASE("tokenizers: GPT-2's byte <-> character table", "[tokenizers]") {
  CHECK(byte_to_unicode(' ') == 0x120);   // "Ġ"
  CHECK(byte_to_unicode('\n') == 0x10A);  // "Ċ"
  CHECK(byte_to_unicode('A') == U'A');
  CHECK(byte_to_unicode(0xAD) == 0x143);  // the soft hyphen is the last of the 68 moved bytes
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_to_unicode(static_cast<std::uint8_t>(b));
    CHECK(unicode_to_byte(c) == b);
    seen.insert(c);
  }
  CHECK(seen.size() == 256);
  CHECK(unicode_to_byte(0x20) == -1);
  CHECK(unicode_to_byte(0x144) == -1);
}

TEST_CASE("tokenizers: GPT-2's pre-tokenization cuts as its regular expression does", "[tokenizers]") {
  using Pieces = std::vector<std::string_view>;
  CHECK(gpt2_pretokenize("Hello world") == Pieces{"Hello", " world"});
  CHECK(gpt2_pretokenize("I'm they'll 'tis O'Neil") ==
        Pieces{"I", "'m", " they", "'ll", " '", "tis", " O", "'", "Neil"});
  CHECK(gpt2_pretokenize("a  b   c") == Pieces{"a", " ", " b", "  ", " c"});
  CHECK(gpt2_pretokenize("a\n\nb \n c") == Pieces{"a", "\n", "\n", "b", " \n", " c"});
  CHECK(gpt2_pretokenize("end  ") == Pieces{"end", "  "});
  CHECK(gpt2_pretokenize("x\tz") == Pieces{"x", "\t", "z"});
  CHECK(gpt2_pretokenize("1999's $3.50!!") == Pieces{"1999", "'s", " $", "3", ".", "50", "!!"});
  CHECK(gpt2_pretokenize("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87") == Pieces{"caf\xC3\xA9", " \xE4\xB8\xAD\xE6\x96\x87"});
  // U+0085 is whitespace, as Unicode's White_Space has it.
  CHECK(gpt2_pretokenize("ok\xC2\x85 go") == Pieces{"ok", "\xC2\x85", " go"});
  // A byte outside valid UTF-8 is a character of [^\s\p{L}\p{N}].
  CHECK(gpt2_pretokenize("ab\xFF\xFE cd \x80") == Pieces{"ab", "\xFF\xFE", " cd", " \x80"});
  CHECK(gpt2_pretokenize("").empty());
  // Any bytes: the pieces are non-empty and concatenate back to the text.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    std::string text(rng() % 40, '\0');
    for (char& c : text) c = static_cast<char>("a '\n\t1\xC3\xA9\x85\xE2\x80\xAF!"[rng() % 14]);
    std::string joined;
    for (const auto p : gpt2_pretokenize(text)) {
      CHECK_FALSE(p.empty());
      joined += p;
    }
    CHECK(joined == text);
  }
}

TEST_CASE("tokenizers: GPT-2's BPE gives js-tiktoken's ids on reviews and hand-written cases", "[tokenizers]") {
  const auto& bpe = gpt2();
  CHECK(bpe.vocab_size() == 50257);
  CHECK(bpe.token_to_id("\xC4\xA0the") == 262);  // "Ġthe"
  CHECK(bpe.id_to_token(50256) == "<|endoftext|>");
  std::size_t cases = 0, reviews = 0;
  for (const json& row : read_jsonl(kFixtures / "gpt2_cases.jsonl")) {
    const std::string text = case_text(row);
    CAPTURE(row["name"].get<std::string>());
    const Ids ids = bpe.encode(text);
    CHECK(ids == row["ids"].get<Ids>());
    CHECK(bpe.decode(ids) == text);
    ++cases;
    reviews += row["name"].get<std::string>().rfind("aclImdb/", 0) == 0;
  }
  CHECK(cases == 166);
  CHECK(reviews == 150);
  // Special tokens: matched by encode, plain text to encode_ordinary.
  CHECK(bpe.encode("a<|endoftext|>b") == Ids{64, 50256, 65});
  CHECK(bpe.encode_ordinary("a<|endoftext|>b") == Ids{64, 27, 91, 437, 1659, 5239, 91, 29, 65});
}

TEST_CASE("tokenizers: GPT-2's BPE round-trips any bytes", "[tokenizers]") {
  const auto& bpe = gpt2();
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 256);
    const Ids ids = bpe.encode(bytes);
    CHECK(bpe.decode(ids) == bytes);
    for (const auto id : ids) CHECK((id >= 0 && id < 50257));
  }
  CHECK(bpe.encode("").empty());
  CHECK(bpe.decode({}).empty());
}

TEST_CASE("tokenizers: a Hugging Face tokenizer.json gives the ids of vocab.json + merges.txt", "[tokenizers]") {
  TempDir tmp;
  const auto rows = read_jsonl(kFixtures / "gpt2_cases.jsonl");
  for (const bool pairs : {false, true}) {
    CAPTURE(pairs);
    write_file(tmp.path / "tokenizer.json", gpt2_tokenizer_json(pairs).dump());
    const auto bpe = ByteLevelBPE::from_pretrained(tmp.path);
    REQUIRE(bpe.special_tokens().size() == 1);
    CHECK(bpe.special_tokens()[0].second == 50256);
    for (std::size_t i = 0; i < rows.size(); i += 8) {
      const std::string text = case_text(rows[i]);
      CHECK(bpe.encode(text) == rows[i]["ids"].get<Ids>());
    }
    CHECK(bpe.encode("<|endoftext|>") == Ids{50256});
  }
  // Without tokenizer.json the folder's vocab.json + merges.txt serve, <|endoftext|> special.
  TempDir files;
  fs::copy_file(kFixtures / "gpt2" / "vocab.json", files.path / "vocab.json");
  fs::copy_file(kFixtures / "gpt2" / "merges.txt", files.path / "merges.txt");
  CHECK(ByteLevelBPE::from_pretrained(files.path).encode("x<|endoftext|>") == Ids{87, 50256});
}

TEST_CASE("tokenizers: byte-level BPE's readers name the file and the problem", "[tokenizers]") {
  TempDir tmp;
  const fs::path vocab = kFixtures / "gpt2" / "vocab.json", merges = kFixtures / "gpt2" / "merges.txt";
  CHECK_THAT(error_of([&] { ByteLevelBPE::from_files(tmp.path / "nope.json", merges); }),
             Catch::Contains("nope.json") && Catch::Contains("No such file"));
  CHECK_THAT(error_of([&] { ByteLevelBPE::from_files(vocab, tmp.path); }), Catch::Contains("is a folder"));
  // The error of from_files with `contents` written as the vocabulary (or the merges) named `name`.
  const auto with_vocab = [&](const std::string& name, const std::string& contents) {
    write_file(tmp.path / name, contents);
    return error_of([&] { ByteLevelBPE::from_files(tmp.path / name, merges); });
  };
  const auto with_merges = [&](const std::string& name, const std::string& contents) {
    write_file(tmp.path / name, contents);
    return error_of([&] { ByteLevelBPE::from_files(vocab, tmp.path / name); });
  };
  CHECK_THAT(with_vocab("bad.json", "{\"a\": 1,"), Catch::Contains("bad.json") && Catch::Contains("not valid JSON"));
  CHECK_THAT(with_vocab("list.json", "[1, 2]"), Catch::Contains("not an object"));
  CHECK_THAT(with_vocab("neg.json", "{\"a\": -3}"), Catch::Contains("'a'") && Catch::Contains("-3"));
  CHECK_THAT(with_vocab("sparse.json", "{\"a\": 0, \"b\": 2000000000}"),
             Catch::Contains("largest id is 2000000000") && Catch::Contains("only 2 tokens"));
  CHECK_THAT(with_vocab("small.json", "{\"a\": 0, \"b\": 1}"), Catch::Contains("no token for byte 0x00"));
  CHECK_THAT(with_merges("merges3.txt", "#version: 0.2\n\xC4\xA0 t\nh e x\n"),
             Catch::Contains("merges3.txt:3") && Catch::Contains("'h e x'"));
  CHECK_THAT(with_merges("unknown.txt", "#version: 0.2\nzzzq x\n"),
             Catch::Contains("unknown.txt:2") && Catch::Contains("'zzzq'"));
  CHECK_THAT(error_of([&] { ByteLevelBPE::from_files(vocab, merges, {"<|fim|>"}); }), Catch::Contains("'<|fim|>'"));
  CHECK_THAT(error_of([&] { ByteLevelBPE::from_pretrained(tmp.path / "empty"); }),
             Catch::Contains("neither tokenizer.json nor vocab.json"));
  // tokenizer.json: what changes the computation and is not implemented is refused by name.
  const auto refused = [&](const std::function<void(json&)>& change) {
    json j = gpt2_tokenizer_json(false);
    change(j);
    write_file(tmp.path / "tokenizer.json", j.dump());
    return error_of([&] { ByteLevelBPE::from_tokenizer_json(tmp.path / "tokenizer.json"); });
  };
  CHECK_THAT(refused([](json& j) { j["model"]["type"] = "Unigram"; }), Catch::Contains("\"Unigram\""));
  CHECK_THAT(refused([](json& j) { j["normalizer"] = {{"type", "NFC"}}; }), Catch::Contains("normalizer (\"NFC\")"));
  CHECK_THAT(refused([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; }), Catch::Contains("\"Metaspace\""));
  CHECK_THAT(refused([](json& j) { j["pre_tokenizer"]["add_prefix_space"] = true; }),
             Catch::Contains("add_prefix_space"));
  CHECK_THAT(refused([](json& j) { j["model"]["byte_fallback"] = true; }), Catch::Contains("model.byte_fallback"));
  CHECK_THAT(refused([](json& j) { j["model"]["dropout"] = 0.1; }), Catch::Contains("dropout"));
  CHECK_THAT(refused([](json& j) { j["added_tokens"][0]["lstrip"] = true; }),
             Catch::Contains("added_tokens[0].lstrip"));
  CHECK_THAT(refused([](json& j) { j["model"]["merges"][5] = 7; }), Catch::Contains("model.merges[5]"));
  CHECK_THAT(refused([](json& j) { j.erase("model"); }), Catch::Contains("no \"model\""));
  CHECK_THAT(refused([](json& j) { j["added_tokens"][0]["id"] = 3; }),
             Catch::Contains("id 3 is given to two tokens") || Catch::Contains("has two ids"));
  // decode refuses an id by value.
  CHECK_THAT(invalid_argument_of([] { gpt2().decode({464, 50257}); }), Catch::Contains("ids[1] = 50257"));
  CHECK_THAT(invalid_argument_of([] { gpt2().decode({-1}); }), Catch::Contains("-1"));
  CHECK_THAT(invalid_argument_of([] { gpt2().id_to_token(70000); }), Catch::Contains("70000"));
}

TEST_CASE("tokenizers: the protobuf reader walks fields and refuses malformed messages", "[tokenizers]") {
  // field 1 varint 150, field 2 "hi", field 3 fixed32 1.5f, field 4 fixed64
  const std::string msg("\x08\x96\x01\x12\x02hi\x1d\x00\x00\xc0\x3f\x21\x01\x02\x03\x04\x05\x06\x07\x08", 21);
  ProtoReader r(msg);
  ProtoField f;
  REQUIRE(r.next(f));
  CHECK((f.number == 1 && f.wire_type == 0 && f.number_value == 150));
  REQUIRE(r.next(f));
  CHECK((f.number == 2 && f.bytes == "hi"));
  REQUIRE(r.next(f));
  CHECK((f.number == 3 && f.as_float() == 1.5f));
  REQUIRE(r.next(f));
  CHECK((f.number == 4 && f.number_value == 0x0807060504030201ULL));
  CHECK_FALSE(r.next(f));
  const auto error = [](const std::string& bytes) {
    ProtoReader reader(bytes);
    ProtoField field;
    return error_of([&] {
      while (reader.next(field)) {
      }
    });
  };
  CHECK_THAT(error(std::string("\x12\x05hi", 4)), Catch::Contains("length 5, past the end"));
  CHECK_THAT(error(std::string("\x08\x96", 2)), Catch::Contains("runs past the end"));
  CHECK_THAT(error(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)),
             Catch::Contains("longer than 10"));
  CHECK_THAT(error(std::string("\x0b", 1)), Catch::Contains("wire type 3 (start group)"));
  CHECK_THAT(error(std::string("\x00\x01", 2)), Catch::Contains("number 0"));
  CHECK_THAT(error(std::string("\x1d\x00\x00", 3)), Catch::Contains("fixed32"));
}

TEST_CASE("tokenizers: SentencePiece models give sentencepiece's ids, pieces and decodings", "[tokenizers]") {
  for (const std::string name : {"llama_bpe", "unigram", "nfkc_unigram"}) {
    CAPTURE(name);
    const auto sp = SentencePiece::load(kFixtures / (name + ".model"));
    CHECK(sp.model_type() == (name == "llama_bpe" ? SentencePieceModelType::bpe : SentencePieceModelType::unigram));
    std::size_t cases = 0, with_pieces = 0;
    for (const json& row : read_jsonl(kFixtures / (name + "_cases.jsonl"))) {
      CAPTURE(row["name"].get<std::string>());
      const std::string text = case_text(row);
      const Ids ids = sp.encode(text);
      CHECK(ids == row["ids"].get<Ids>());
      CHECK(sp.decode(ids) == row["decoded"].get<std::string>());
      if (row.contains("pieces")) {
        CHECK(sp.encode_as_pieces(text) == row["pieces"].get<Strings>());
        ++with_pieces;
      }
      ++cases;
    }
    CHECK(cases == 166);
    CHECK(with_pieces == 16);
    for (const json& row : read_jsonl(kFixtures / (name + "_decode.jsonl"))) {
      CAPTURE(row["ids"].dump());
      CHECK(sp.decode(row["ids"].get<Ids>()) == row["decoded"].get<std::string>());
    }
    CHECK(sp.bos_id() == 1);
    CHECK(sp.eos_id() == 2);
    CHECK(sp.unk_id() == 0);
    CHECK(sp.pad_id() == -1);
    CHECK_THAT(invalid_argument_of([&] {
                 sp.decode({5, static_cast<std::int64_t>(sp.vocab_size())});
               }),
               Catch::Contains("ids[1] = " + std::to_string(sp.vocab_size())));
  }
}

TEST_CASE("tokenizers: SentencePiece round trips and byte fallback", "[tokenizers]") {
  const auto llama = SentencePiece::load(kFixtures / "llama_bpe.model");
  const auto unigram = SentencePiece::load(kFixtures / "unigram.model");
  // Identity normalization without remove_extra_whitespaces (Llama's): valid UTF-8 comes back as it was,
  // except a "▁" of the text's own, which decodes as a space, as in sentencepiece.
  CHECK(llama.decode(llama.encode("a\xE2\x96\x81"
                                  "b")) == "a b");
  std::mt19937 rng(3);
  const std::vector<std::string> alphabet = {
      "a", "e", "t", " ", "  ", "\n", "\t", "7", "\xC3\xA9", "\xF0\x9F\x98\x80", "\xE4\xB8\xAD", "!", "'", "<", "\x01"};
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    for (std::size_t n = rng() % 30; n > 0; --n) text += alphabet[rng() % alphabet.size()];
    CAPTURE(text);
    CHECK(llama.decode(llama.encode(text)) == text);
  }
  // Byte fallback spells a character that no piece holds as its UTF-8 bytes.
  const Ids ids = unigram.encode("\xE4\xB8\xAD");
  REQUIRE(ids.size() >= 3);
  CHECK(unigram.id_to_piece(ids[ids.size() - 3]) == "<0xE4>");
  CHECK(unigram.type(ids.back()) == PieceType::byte);
  // Invalid UTF-8 becomes U+FFFD, whose bytes come back.
  CHECK(llama.decode(llama.encode("a\xFF")) == "a\xEF\xBF\xBD");
  CHECK(unigram.normalize("  a   b  ") ==
        "\xE2\x96\x81"
        "a\xE2\x96\x81"
        "b");
  CHECK(llama.normalize("  a ") ==
        "\xE2\x96\x81\xE2\x96\x81\xE2\x96\x81"
        "a\xE2\x96\x81");
}

namespace {

// A minimal serialized ModelProto, field by field, for the reader's errors.
std::string varint(std::uint64_t v) {
  std::string out;
  do {
    out.push_back(static_cast<char>((v & 0x7F) | (v >= 0x80 ? 0x80 : 0)));
    v >>= 7;
  } while (v);
  return out;
}
std::string field_bytes(int number, const std::string& payload) {
  return varint(number << 3 | 2) + varint(payload.size()) + payload;
}
std::string field_varint(int number, std::uint64_t v) { return varint(number << 3) + varint(v); }
std::string piece(const std::string& text, int type = 1) {
  return field_bytes(1, field_bytes(1, text) + std::string("\x15\x00\x00\x80\xbf", 5) + field_varint(3, type));
}
std::string basic_pieces() {
  return piece("<unk>", 2) + piece("<s>", 3) + piece("</s>", 3) + piece("\xE2\x96\x81") + piece("a");
}

}  // namespace

TEST_CASE("tokenizers: SentencePiece's reader names the file and the problem", "[tokenizers]") {
  TempDir tmp;
  const auto error = [&](const std::string& bytes) {
    write_file(tmp.path / "tokenizer.model", bytes);
    return error_of([&] { SentencePiece::load(tmp.path / "tokenizer.model"); });
  };
  // The minimal model loads and encodes.
  write_file(tmp.path / "ok.model", basic_pieces());
  const auto ok = SentencePiece::load(tmp.path / "ok.model");
  CHECK(ok.encode("a a") == Ids{3, 4, 3, 4});
  CHECK(ok.encode("b") == Ids{3, 0});
  CHECK(ok.decode({3, 4, 0, 1}) == "a \xE2\x81\x87 ");
  CHECK_THAT(error_of([&] { SentencePiece::load(tmp.path / "missing.model"); }),
             Catch::Contains("missing.model") && Catch::Contains("No such file"));
  CHECK_THAT(error(basic_pieces().substr(0, 20)),
             Catch::Contains("tokenizer.model") && Catch::Contains("past the end"));
  CHECK_THAT(error(std::string("\x0b", 1)), Catch::Contains("the ModelProto") && Catch::Contains("start group"));
  CHECK_THAT(error(piece("<s>", 3) + piece("a")), Catch::Contains("no UNKNOWN piece"));
  CHECK_THAT(error(basic_pieces() + piece("<unk2>", 2)),
             Catch::Contains("pieces[5] and pieces[0] are both UNKNOWN") || Catch::Contains("both UNKNOWN"));
  CHECK_THAT(error(basic_pieces() + piece("a")), Catch::Contains("pieces[5] 'a' repeats pieces[4]"));
  CHECK_THAT(error(basic_pieces() + piece("")), Catch::Contains("pieces[5] is empty"));
  CHECK_THAT(error(basic_pieces() + piece("x", 9)), Catch::Contains("pieces[5] has type 9"));
  CHECK_THAT(error(basic_pieces() + piece("<0x41>", 6)), Catch::Contains("byte_fallback is false"));
  CHECK_THAT(error(basic_pieces() + piece("<0x41>", 6) + field_bytes(2, field_varint(35, 1))),
             Catch::Contains("no BYTE piece <0x00>"));
  CHECK_THAT(error(basic_pieces() + field_bytes(2, field_varint(3, 3))), Catch::Contains("WORD"));
  CHECK_THAT(error(basic_pieces() + field_bytes(2, field_varint(3, 7))), Catch::Contains("model_type is 7"));
  CHECK_THAT(error(basic_pieces() + field_bytes(2, field_varint(24, 1))),
             Catch::Contains("treat_whitespace_as_suffix"));
  CHECK_THAT(error(basic_pieces() + field_bytes(3, field_varint(1, 5))),
             Catch::Contains("normalizer_spec.name (field 1) has wire type varint"));
  CHECK_THAT(error(basic_pieces() +
                   field_bytes(3, field_bytes(1, "nfkc") + field_bytes(2, std::string("\x10\x00\x00\x00xyz", 7)))),
             Catch::Contains("'nfkc'") && Catch::Contains("does not fit"));
  CHECK_THAT(error(basic_pieces() + field_bytes(5, field_bytes(2, "\x04\x00\x00\x00\x00\x00\x00\x00"))),
             Catch::Contains("denormalizer"));
}

TEST_CASE("tokenizers: every training review, exact round trips and encoding in seconds", "[tokenizers]") {
  const auto real = real_imdb_archive();
  if (!real) return;
  const auto data = read_imdb(*real, ImdbSplits::TrainOnly);
  REQUIRE(data.train.size() == 25000);
  using clock = std::chrono::steady_clock;
  const auto& bpe = gpt2();
  const auto llama = SentencePiece::load(kFixtures / "llama_bpe.model");
  const auto unigram = SentencePiece::load(kFixtures / "unigram.model");
  std::size_t failures = 0;
  // Encodes every review with tok and checks that decoding gives decoded(review): the ids and the seconds.
  const auto round_trips = [&](const char* name, const auto& tok, const auto& decoded) {
    std::size_t count = 0;
    const auto t0 = clock::now();
    for (const auto& r : data.train) {
      const Ids ids = tok.encode(r.text);
      count += ids.size();
      if (tok.decode(ids) != decoded(r.text) && failures++ < 3)
        FAIL_CHECK(name << " does not round-trip review " << r.id);
    }
    return std::pair{count, std::chrono::duration<double>(clock::now() - t0).count()};
  };
  const auto same = [](const std::string& text) { return text; };
  // Extra whitespace is removed: decoding gives the normalized text, "▁" as spaces, no dummy prefix.
  const auto normalized = [&](const std::string& text) {
    std::string expected;
    const std::string n = unigram.normalize(text);
    for (std::size_t i = 3; i < n.size();) {
      const bool space = n.compare(i, 3, "\xE2\x96\x81") == 0;
      expected += space ? std::string(" ") : n.substr(i, 1);
      i += space ? 3 : 1;
    }
    return expected;
  };
  const auto [gpt2_ids, gpt2_s] = round_trips("GPT-2", bpe, same);
  const auto [llama_ids, llama_s] = round_trips("llama_bpe", llama, same);
  const auto [unigram_ids, unigram_s] = round_trips("unigram", unigram, normalized);
  CHECK(failures == 0);
  WARN("25,000 training reviews: GPT-2 BPE " << gpt2_ids << " ids in " << gpt2_s << " s (with decoding), llama_bpe "
                                             << llama_ids << " in " << llama_s << " s, unigram " << unigram_ids
                                             << " in " << unigram_s << " s");
  CHECK(gpt2_s < 60.0);
  CHECK(llama_s < 120.0);
  CHECK(unigram_s < 60.0);
}

TEST_CASE("tokenizers: the references' ids of every training review, where they are given", "[tokenizers]") {
  // TAPEGRAD_TOKENIZER_REFERENCE: a folder holding the fixture scripts' --all output, gpt2.jsonl
  // (make_gpt2_bpe_fixtures.py --all DIR/gpt2.jsonl) and spm.<model>.jsonl
  // (make_sentencepiece_fixtures.py --all DIR/spm), made with the models of tokenizers.tar.xz.
  const char* dir = std::getenv("TAPEGRAD_TOKENIZER_REFERENCE");
  if (!dir) {
    WARN("skipped: TAPEGRAD_TOKENIZER_REFERENCE is not set");
    return;
  }
  const auto compare = [&](const fs::path& file, const std::function<Ids(const std::string&)>& encode) {
    CAPTURE(file.string());
    std::size_t rows = 0, mismatches = 0;
    for (const json& row : read_jsonl(file)) {
      ++rows;
      if (encode(row["text"].get<std::string>()) != row["ids"].get<Ids>() && mismatches++ < 3)
        FAIL_CHECK("row " << rows << " differs");
    }
    CHECK(rows == 25000);
    CHECK(mismatches == 0);
  };
  compare(fs::path(dir) / "gpt2.jsonl", [](const std::string& t) { return gpt2().encode(t); });
  for (const std::string name : {"llama_bpe", "unigram", "nfkc_unigram"}) {
    const auto sp = SentencePiece::load(kFixtures / (name + ".model"));
    compare(fs::path(dir) / ("spm." + name + ".jsonl"), [&](const std::string& t) { return sp.encode(t); });
  }
}
