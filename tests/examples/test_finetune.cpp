// train_lm finetune, export and perplexity (examples/lm): full and LoRA fine-tuning of small Hugging Face
// checkpoints (tests/fixtures/pretrained) lower the validation loss; a train_lm run and a fine-tuned run
// exported in Hugging Face's layout reload to the same logits; the LoRA adapters exported alone are the
// files nn::save_lora_adapter writes and load back onto the base; --resume ends where an uninterrupted run
// does; bad inputs are refused naming the problem. A train_lm GPT run exports as GPT2LMHeadModel (from_pretrained,
// generate and finetune give the run's logits and tokens); a run whose GPT has an output bias still loads,
// resumes and fine-tunes, and its export is refused by name; a Llama folder with a SentencePiece
// tokenizer.model fine-tunes, generates text and exports with its tokenizer.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include <xtensor/xadapt.hpp>

#include "examples/lm/cli.hpp"
#include "examples/lm/finetune.hpp"
#include "examples/lm/model.hpp"
#include "examples/lm/model_folder.hpp"
#include "examples/lm/text_tokenizer.hpp"
#include "examples/lm/train.hpp"
#include "examples/lm/word_level_json.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/datasets/text/tokenizer.hpp"
#include "tapegrad/datasets/tokenizers/bytes_to_unicode.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/models/pretrained.hpp"
#include "tapegrad/nn/lora_adapter_file.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/run_directory.hpp"
#include "tests/examples/cli_harness.hpp"
#include "tests/examples/programs.hpp"
#include "tests/examples/tiny_runs.hpp"
#include "tests/helpers.hpp"

namespace fs = std::filesystem;
using tapegrad::testing::CliResult;
using tapegrad::testing::run_lm;
using tapegrad::testing::TempDir;

namespace {

const fs::path kPretrained = fs::path(TAPEGRAD_TEST_DATA_DIR) / "../fixtures/pretrained";

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A text the fixtures' random models learn quickly: a few sentences over and over.
fs::path repetitive_text(const fs::path& dir) {
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += i % 2 ? "the movie was great and the acting was good .\n" : "a good film , i loved the story .\n";
  }
  write_text(dir / "text.txt", text);
  return dir / "text.txt";
}

// A copy of a fixture checkpoint with a word tokenizer (train_lm's) of the text's tokens.
fs::path llama_with_words(const fs::path& dir, std::size_t extra_tokens = 0) {
  const fs::path folder = dir / "llama";
  fs::create_directories(folder);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(kPretrained / "llama_f32" / f, folder / f);
  std::vector<std::string> tokens = {"<pad>", "<unk>"};
  for (const auto& t : tapegrad::datasets::tokenize(read_bytes(repetitive_text(dir)))) {
    if (std::find(tokens.begin(), tokens.end(), t) == tokens.end()) tokens.push_back(t);
  }
  for (std::size_t i = 0; i < extra_tokens; ++i) tokens.push_back(fmt::format("w{}", i));
  const auto vocab = tapegrad::datasets::Vocabulary::from_tokens(tokens);
  write_text(folder / "tokenizer.json", lm::word_level_tokenizer_json(vocab).dump());
  return folder;
}

// A copy of the GPT-2 fixture with a byte-level BPE tokenizer.json of the 256 bytes and no merges (its
// vocabulary of 300 has room for them).
fs::path gpt2_with_bytes(const fs::path& dir) {
  const fs::path folder = dir / "gpt2";
  fs::create_directories(folder);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(kPretrained / "gpt2_prefixed_f32_tied" / f, folder / f);
  nlohmann::json vocab = nlohmann::json::object();
  const auto& chars = tapegrad::datasets::tokenizers::byte_to_unicode_strings();
  for (int b = 0; b < 256; ++b) vocab[chars[b]] = b;
  const nlohmann::json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  write_text(folder / "tokenizer.json", tokenizer.dump());
  return folder;
}

// A Hugging Face Llama folder whose tokenizer is tokenizer.model alone, as Llama 2 ships it: a random Llama
// over the 4,000 pieces of the SentencePiece BPE model of tests/fixtures/tokenizers.tar.xz (Llama 2's
// settings: byte fallback, split digits, <s> first), with its tokenizer_config.json.
fs::path llama_with_sentencepiece(const fs::path& dir) {
  const fs::path folder = dir / "llama-sp";
  auto o = tapegrad::testing::sized<tapegrad::models::LlamaOptions>(4000, 64, 16, 4, 2);
  o.num_kv_heads = 2;
  o.hidden = 40;
  o.tie_embeddings = false;
  o.padding_idx = std::nullopt;  // Llama 2's config has no pad_token_id
  tapegrad::Generator gen(5);
  tapegrad::models::save_pretrained(tapegrad::models::Llama<float>(o, gen), folder.string());
  fs::copy_file(fs::path(TAPEGRAD_TOKENIZER_FIXTURES_DIR) / "llama_bpe.model", folder / "tokenizer.model");
  write_text(folder / "tokenizer_config.json", nlohmann::json{{"tokenizer_class", "LlamaTokenizer"},
                                                              {"add_bos_token", true},
                                                              {"add_eos_token", false},
                                                              {"bos_token", "<s>"},
                                                              {"eos_token", "</s>"},
                                                              {"unk_token", "<unk>"},
                                                              {"model_max_length", 64}}
                                                   .dump(2));
  return folder;
}

std::vector<std::string> finetune_args(const fs::path& from, const fs::path& text, const fs::path& out) {
  return {"finetune",   "--from",      from.string(), "--text",       text.string(), "--out",
          out.string(), "--steps",     "30",          "--eval-every", "15",          "--warmup",
          "2",          "--lr",        "0.05",        "--batch-size", "4",           "--threads",
          "1",          "--precision", "fp32",        "--log-every",  "5",           "--lora-dropout",
          "0"};
}

// The validation loss before the first step and the best one, from metrics.jsonl.
std::pair<double, double> losses(const fs::path& run) {
  double before = -1, best = 1e30;
  for (const auto& line : tapegrad::train::read_metrics(run / "metrics.jsonl")) {
    if (!line.contains("valid_loss")) continue;
    if (line.at("step") == 0) {
      before = line.at("valid_loss").get<double>();
    } else {
      best = std::min(best, line.at("valid_loss").get<double>());
    }
  }
  return {before, best};
}

// Fine-tunes the Llama folder base on text into run, with LoRA of rank `rank` on three projections ("0":
// every weight), and checks that it ran and lowered the validation loss from a real start.
void check_llama_finetune_learns(const fs::path& base, const fs::path& text, const fs::path& run,
                                 const std::string& rank) {
  auto args = finetune_args(base, text, run);
  args.insert(args.end(), {"--lora-rank", rank, "--lora-targets", "q_proj,v_proj,down_proj"});
  const CliResult r = run_lm(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto [before, best] = losses(run);
  CHECK(before > 0);
  CHECK(best < before - 0.5);
}

const xt::xarray<std::int64_t>& some_ids() {
  static const xt::xarray<std::int64_t> ids = {{2, 5, 7, 3, 9, 4, 11, 6}, {8, 3, 3, 12, 2, 10, 5, 1}};
  return ids;
}

double max_difference(const tapegrad::models::CausalLM<float>& a, const tapegrad::models::CausalLM<float>& b) {
  const xt::xarray<float> x = a.forward(some_ids()).data(), y = b.forward(some_ids()).data();
  REQUIRE(x.shape() == y.shape());
  return xt::amax(xt::abs(x - y))();
}

}  // namespace

TEST_CASE("train_lm finetune: LoRA and full fine-tuning of a Hugging Face Llama lower the loss and export",
          "[finetune]") {
  TempDir tmp;
  const fs::path base = llama_with_words(tmp.path), text = tmp.path / "text.txt";
  for (const std::string rank : {"4", "0"}) {
    INFO("--lora-rank " << rank);
    const fs::path run = tmp.path / ("run" + rank);
    check_llama_finetune_learns(base, text, run, rank);
    // Only the adapters train with LoRA.
    const nlohmann::json first = tapegrad::train::read_metrics(run / "metrics.jsonl").front();
    if (rank == "4") CHECK(first.at("trained_parameters") < first.at("parameters").get<double>() / 4);
    if (rank == "0") CHECK(first.at("trained_parameters") == first.at("parameters"));

    // Exported (merged) and reloaded: the logits of the run's model.
    const fs::path exported = tmp.path / ("hf" + rank);
    const CliResult e = run_lm({"export", "--run", run.string(), "--out", exported.string()});
    INFO(e.err);
    REQUIRE(e.code == 0);
    const lm::ModelFolder tuned = lm::load_model_folder(run);
    const auto reloaded = tapegrad::models::from_pretrained<float>(exported.string());
    CHECK(max_difference(*tuned.model, *reloaded) < (rank == "0" ? 1e-6 : 1e-4));
    CHECK(read_bytes(exported / "tokenizer.json") == read_bytes(base / "tokenizer.json"));
    // perplexity of the run and of its export agree.
    const auto ppl = [&](const fs::path& folder) {
      const CliResult p = run_lm(
          {"perplexity", "--run", folder.string(), "--text", text.string(), "--threads", "1", "--precision", "fp32"});
      INFO(p.err);
      REQUIRE(p.code == 0);
      return p.out.substr(0, p.out.find(':'));
    };
    CHECK(ppl(run) == ppl(exported));
    CHECK(ppl(run) != ppl(base));

    const fs::path adapter = tmp.path / ("adapter" + rank);
    const CliResult a = run_lm({"export", "--run", run.string(), "--out", adapter.string(), "--adapter"});
    if (rank == "0") {
      CHECK(a.code == 2);
      CHECK_THAT(a.err, Catch::Contains("has no LoRA adapters"));
      continue;
    }
    INFO(a.err);
    REQUIRE(a.code == 0);
    // The files nn/lora_adapter_file writes of the same model ...
    const fs::path direct = tmp.path / "direct";
    tapegrad::nn::LoraFileOptions options;
    options.base_model_name_or_path = base.string();
    options.module_name = [](const std::string& n) { return "model." + n; };
    tapegrad::nn::save_lora_adapter(*tuned.module, *tuned.lora, direct.string(), options);
    for (const char* f : {"adapter_model.safetensors", "adapter_config.json"}) {
      CHECK(read_bytes(adapter / f) == read_bytes(direct / f));
    }
    const nlohmann::json config = nlohmann::json::parse(read_bytes(adapter / "adapter_config.json"));
    CHECK(config.at("target_modules") == nlohmann::json({"q_proj", "v_proj", "down_proj"}));
    // ... which, loaded onto the base, give the run's model.
    const auto fresh = tapegrad::models::from_pretrained<float>(base.string());
    auto& module = dynamic_cast<tapegrad::nn::Module<float>&>(*fresh);
    tapegrad::nn::load_lora_adapter(module, adapter.string(), options);
    module.eval();
    CHECK(max_difference(*tuned.model, *fresh) == 0);
  }
}

TEST_CASE("train_lm finetune: LoRA on a GPT-2 checkpoint with its byte-level BPE tokenizer", "[finetune]") {
  TempDir tmp;
  const fs::path base = gpt2_with_bytes(tmp.path), text = repetitive_text(tmp.path), run = tmp.path / "run";
  auto args = finetune_args(base, text, run);
  args.insert(args.end(), {"--lora-targets", "c_fc,c_proj", "--context", "40"});
  const CliResult r = run_lm(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto [before, best] = losses(run);
  CHECK(best < before - 0.5);
  const CliResult e = run_lm({"export", "--run", run.string(), "--out", (tmp.path / "hf").string()});
  REQUIRE(e.code == 0);
  const auto reloaded = tapegrad::models::from_pretrained<float>((tmp.path / "hf").string());
  CHECK(max_difference(*lm::load_model_folder(run).model, *reloaded) < 1e-4);
  CHECK(read_bytes(tmp.path / "hf" / "tokenizer.json") == read_bytes(base / "tokenizer.json"));
  // The continuation is decoded bytes: the prompt comes back as it was given.
  const CliResult g =
      run_lm({"generate", "--run", run.string(), "--max-new-tokens", "5", "--threads", "1"}, "the movie");
  INFO(g.err);
  REQUIRE(g.code == 0);
  CHECK(g.out.rfind("the movie |", 0) == 0);
}

TEST_CASE("train_lm finetune: LoRA on GPT-2's c_attn and c_proj, its adapters exported under GPT2LMHeadModel's names",
          "[finetune]") {
  TempDir tmp;
  const fs::path base = gpt2_with_bytes(tmp.path), text = repetitive_text(tmp.path), run = tmp.path / "run";
  auto args = finetune_args(base, text, run);
  args.insert(args.end(), {"--lora-targets", "c_attn,c_proj", "--lora-rank", "4", "--context", "40"});
  const CliResult r = run_lm(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto [before, best] = losses(run);
  CHECK(best < before - 0.5);
  const lm::ModelFolder tuned = lm::load_model_folder(run);
  // Each block's attention in-projection, attention output and MLP output projection.
  std::vector<std::string> adapted;
  for (const auto& entry : tapegrad::nn::lora_layers(*tuned.module)) adapted.push_back(entry.first);
  CHECK(adapted == std::vector<std::string>{"encoder.layers.0.self_attn", "encoder.layers.0.self_attn.out_proj",
                                            "encoder.layers.0.linear2", "encoder.layers.1.self_attn",
                                            "encoder.layers.1.self_attn.out_proj", "encoder.layers.1.linear2"});

  const fs::path adapter = tmp.path / "adapter";
  const CliResult a = run_lm({"export", "--run", run.string(), "--out", adapter.string(), "--adapter"});
  INFO(a.err);
  REQUIRE(a.code == 0);
  const nlohmann::json config = nlohmann::json::parse(read_bytes(adapter / "adapter_config.json"));
  CHECK(config.at("target_modules") == nlohmann::json({"c_attn", "c_proj"}));
  CHECK(config.at("fan_in_fan_out") == true);
  CHECK(config.at("r") == 4);
  CHECK(config.at("base_model_name_or_path") == base.string());
  const tapegrad::io::safetensors::File file((adapter / "adapter_model.safetensors").string());
  std::vector<std::string> expected;
  for (const char* layer : {"0", "1"})
    for (const char* module : {"attn.c_attn", "attn.c_proj", "mlp.c_proj"})
      for (const char* part : {"lora_A", "lora_B"})
        expected.push_back(fmt::format("base_model.model.transformer.h.{}.{}.{}.weight", layer, module, part));
  std::vector<std::string> names = file.names();
  std::sort(names.begin(), names.end());
  std::sort(expected.begin(), expected.end());
  CHECK(names == expected);
  CHECK(file.shape("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight") == tapegrad::Shape{4, 16});
  CHECK(file.shape("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight") == tapegrad::Shape{48, 4});
  CHECK(file.shape("base_model.model.transformer.h.1.mlp.c_proj.lora_A.weight") == tapegrad::Shape{4, 64});

  // Loaded onto the GPT-2 checkpoint as PeftModel.from_pretrained would: the fine-tuned logits.
  const auto fresh = tapegrad::models::from_pretrained<float>(base.string());
  auto& module = dynamic_cast<tapegrad::nn::Module<float>&>(*fresh);
  tapegrad::nn::LoraFileOptions options;
  options.module_name = [&](const std::string& n) { return tapegrad::models::hugging_face_module_name(*fresh, n); };
  tapegrad::nn::load_lora_adapter(module, adapter.string(), options);
  module.eval();
  CHECK(max_difference(*tuned.model, *fresh) == 0);
  CHECK(max_difference(*tuned.model, *tapegrad::models::from_pretrained<float>(base.string())) > 1e-4);
  // Merged into the checkpoint's c_attn and c_proj instead: the same logits, to rounding.
  const CliResult e = run_lm({"export", "--run", run.string(), "--out", (tmp.path / "hf").string()});
  INFO(e.err);
  REQUIRE(e.code == 0);
  CHECK(max_difference(*tuned.model, *tapegrad::models::from_pretrained<float>((tmp.path / "hf").string())) < 1e-4);
}

TEST_CASE("train_lm finetune: LoRA on a train_lm GPT run's c_attn, its adapters exported under GPT-2's names",
          "[finetune]") {
  TempDir tmp;
  const fs::path pretrained = tmp.path / "gpt", run = tmp.path / "run", text = repetitive_text(tmp.path);
  auto args = tapegrad::testing::lm_tiny_args("4", "2");
  args.insert(args.end(), {"--out", pretrained.string(), "--precision", "fp32"});
  REQUIRE(run_lm(args).code == 0);
  auto tune = finetune_args(pretrained, text, run);
  *(std::find(tune.begin(), tune.end(), "--steps") + 1) = "4";
  *(std::find(tune.begin(), tune.end(), "--eval-every") + 1) = "2";
  tune.insert(tune.end(), {"--lora-targets", "c_attn"});
  const CliResult r = run_lm(tune);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const fs::path adapter = tmp.path / "adapter";
  const CliResult a = run_lm({"export", "--run", run.string(), "--out", adapter.string(), "--adapter"});
  INFO(a.err);
  REQUIRE(a.code == 0);
  const tapegrad::io::safetensors::File file((adapter / "adapter_model.safetensors").string());
  CHECK(file.contains("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight"));
  // Onto the pretrained run's model: the fine-tuned logits.
  const lm::ModelFolder tuned = lm::load_model_folder(run);
  const auto layers = tapegrad::nn::lora_layers(*tuned.module);
  CHECK(file.names().size() == 2 * layers.size());
  for (const auto& entry : layers) CHECK(entry.first.substr(entry.first.size() - 10) == ".self_attn");
  lm::ModelFolder base = lm::load_model_folder(pretrained);
  tapegrad::nn::LoraFileOptions options;
  options.module_name = lm::peft_module_names(base);
  tapegrad::nn::load_lora_adapter(*base.module, adapter.string(), options);
  base.module->eval();
  CHECK(max_difference(*tuned.model, *base.model) == 0);
}

TEST_CASE("train_lm export: a train_lm run in Hugging Face's layout, its words as tokenizer.json", "[finetune]") {
  TempDir tmp;
  for (const std::string arch : {"gpt", "llama"}) {
    INFO("--arch " << arch);
    const fs::path run = tmp.path / arch, exported = tmp.path / (arch + "-hf");
    auto args = tapegrad::testing::lm_tiny_args("4", "2");
    if (arch == "llama") {
      const auto ff = std::find(args.begin(), args.end(), "--ff");
      args.erase(ff, ff + 2);
      args.insert(args.end(), {"--arch", "llama", "--hidden", "24"});
    }
    args.insert(args.end(), {"--out", run.string(), "--precision", "fp32"});
    REQUIRE(run_lm(args).code == 0);
    const CliResult e = run_lm({"export", "--run", run.string(), "--out", exported.string()});
    INFO(e.err);
    REQUIRE(e.code == 0);
    const lm::ModelFolder trained = lm::load_model_folder(run), reloaded = lm::load_model_folder(exported);
    CHECK(reloaded.kind == lm::ModelFolder::Kind::hugging_face);
    CHECK(max_difference(*trained.model, *reloaded.model) < 1e-5);
    // The tokenizer read back from tokenizer.json is the run's vocabulary.
    REQUIRE(reloaded.tokenizer->words());
    CHECK(reloaded.tokenizer->words()->tokens() == trained.tokenizer->words()->tokens());
    const std::string review = "This MOVIE was <br /><br />great, isn’t it?! A 10/10 film.";
    CHECK(reloaded.tokenizer->encode(review) == trained.tokenizer->encode(review));
    // The same text both ways: generate from the run and from the export.
    const auto generated = [&](const fs::path& folder) {
      const CliResult g = run_lm({"generate", "--run", folder.string(), "--max-new-tokens", "8", "--threads", "1",
                                  "--precision", "fp32", "--temperature", "0"},
                                 "the movie was");
      REQUIRE(g.code == 0);
      return g.out;
    };
    CHECK(generated(run) == generated(exported));
    // An existing export is not overwritten unless asked.
    const CliResult again = run_lm({"export", "--run", run.string(), "--out", exported.string()});
    CHECK(again.code == 2);
    CHECK_THAT(again.err, Catch::Contains("--overwrite"));
    CHECK(run_lm({"export", "--run", run.string(), "--out", exported.string(), "--overwrite"}).code == 0);
  }
  // A word of one byte beyond ASCII (no UTF-8 text alone) travels as "<0xE9>".
  const auto vocab = tapegrad::datasets::Vocabulary::from_tokens({"<pad>", "<unk>", "\xE9", "don't", "."});
  const nlohmann::json json = lm::word_level_tokenizer_json(vocab);
  CHECK(json.at("model").at("vocab").at("<0xE9>") == 2);
  CHECK(lm::vocabulary_from_tokenizer_json(nlohmann::json::parse(json.dump()), "t").tokens() == vocab.tokens());
}

TEST_CASE("train_lm export of a GPT run: GPT2LMHeadModel, whose from_pretrained, generate and finetune are the run's",
          "[finetune]") {
  TempDir tmp;
  const fs::path text = repetitive_text(tmp.path);
  // train_lm's default model (sinusoidal positions, the exact GELU) and the other choices.
  for (const bool defaults : {true, false}) {
    INFO((defaults ? "--pos sinusoidal --activation gelu" : "--pos learned --activation relu"));
    const std::string name = defaults ? "default" : "learned-relu";
    const fs::path run = tmp.path / name, exported = tmp.path / (name + "-hf");
    auto args = tapegrad::testing::lm_tiny_args("4", "2");
    args.insert(args.end(), {"--out", run.string(), "--precision", "fp32"});
    if (!defaults) args.insert(args.end(), {"--pos", "learned", "--activation", "relu"});
    REQUIRE(run_lm(args).code == 0);
    // GPT-2's layout: no bias on the logits.
    const lm::ModelFolder trained = lm::load_model_folder(run);
    CHECK_FALSE(dynamic_cast<const tapegrad::models::GPT<float>&>(*trained.model).output_bias.defined());
    CHECK_FALSE(lm::has_output_bias(run / "model.safetensors"));
    const CliResult e = run_lm({"export", "--run", run.string(), "--out", exported.string()});
    INFO(e.err);
    REQUIRE(e.code == 0);
    const nlohmann::json config = nlohmann::json::parse(read_bytes(exported / "config.json"));
    CHECK(config.at("architectures") == nlohmann::json({"GPT2LMHeadModel"}));
    CHECK(config.at("activation_function") == (defaults ? "gelu" : "relu"));
    CHECK(config.at("n_positions") == 48);
    // The input embeddings are scaled by sqrt(d_model), the head's are not: two tables.
    CHECK(config.at("tie_word_embeddings") == false);

    const auto reloaded = tapegrad::models::from_pretrained<float>(exported.string());
    CHECK(max_difference(*trained.model, *reloaded) < 1e-5);
    const auto greedy = [&](const fs::path& folder) {
      const CliResult g = run_lm({"generate", "--run", folder.string(), "--max-new-tokens", "12", "--threads", "1",
                                  "--precision", "fp32", "--temperature", "0"},
                                 "the movie was");
      INFO(g.err);
      REQUIRE(g.code == 0);
      return g.out;
    };
    CHECK(greedy(run) == greedy(exported));

    // Fine-tuned from the export, it starts where the run itself does, and learns.
    const auto finetuned = [&](const fs::path& from, const std::string& out) {
      const fs::path dir = tmp.path / out;
      const CliResult f = run_lm({"finetune",
                                  "--from",
                                  from.string(),
                                  "--text",
                                  text.string(),
                                  "--out",
                                  dir.string(),
                                  "--steps",
                                  "12",
                                  "--eval-every",
                                  "6",
                                  "--warmup",
                                  "1",
                                  "--lr",
                                  "0.03",
                                  "--batch-size",
                                  "4",
                                  "--threads",
                                  "1",
                                  "--precision",
                                  "fp32",
                                  "--lora-rank",
                                  "0"});
      INFO(f.err);
      REQUIRE(f.code == 0);
      return losses(dir);
    };
    const auto [from_run, best_run] = finetuned(run, name + "-ft");
    const auto [from_export, best_export] = finetuned(exported, name + "-hf-ft");
    CHECK(std::abs(from_export - from_run) < 1e-5);
    CHECK(best_export < from_export - 0.3);
  }
}

TEST_CASE(
    "train_lm: a run whose GPT has an output bias loads, generates, resumes and fine-tunes, and export refuses it",
    "[finetune]") {
  namespace tt = tapegrad::train;
  TempDir tmp;
  const fs::path run = tmp.path / "run";
  lm::Config c = tapegrad::testing::lm_tiny_config(6, 3);
  c.out = run.string();
  c.precision = "fp32";
  c.threads = 1;
  std::ostringstream out, log;
  // Stopped after step 4: the checkpoint of step 3 stays.
  REQUIRE(lm::train(c, out, log, false, [](std::int64_t step) { return step == 4; }).interrupted);

  // The same run as a train_lm whose GPT had a bias on the logits wrote it: its model.safetensors and
  // checkpoint hold output_bias, and the checkpoint Adam's state of it.
  const tt::RunDirectory dir(run, {lm::kVocabFile});
  const lm::Config saved = lm::read_config(dir);
  const auto vocab = tapegrad::datasets::Vocabulary::load(dir.file(lm::kVocabFile));
  lm::LanguageModel now(saved, vocab), old(saved, vocab, /*output_bias=*/true);
  tapegrad::optim::AdamW<float> now_adam(now.module().parameters(), {}), old_adam(old.module().parameters(), {});
  const std::int64_t step = tt::load_checkpoint(dir.checkpoint().string(), now.module(), now_adam);
  old.module().load_state_dict(now.module().state_dict(), /*strict=*/false);
  auto bias = old.module().state_dict().at("output_bias");
  for (std::size_t i = 0; i < bias.numel(); ++i) bias.mutable_data()(i) = 0.01f * float(i % 7) - 0.03f;
  old.gpt().dropout_generator()->set_state(now.gpt().dropout_generator()->state());
  // Adam's state is by parameter index: output_bias, the GPT's own parameter, comes first.
  std::map<std::string, std::size_t> old_index;
  for (const auto& [name, p] : old.module().named_parameters()) old_index.emplace(name, old_index.size());
  const auto now_names = now.module().named_parameters();
  REQUIRE(old_index.size() == now_names.size() + 1);
  tapegrad::StateDict<float> adam;
  for (const auto& [key, value] : now_adam.state_dict()) {
    std::size_t i = 0;
    std::string field;
    adam[tapegrad::optim::parse_state_key(key, i, field)
             ? fmt::format("state.{}.{}", old_index.at(now_names.at(i).first), field)
             : key] = value;
  }
  const std::size_t b = old_index.at("output_bias");
  adam[fmt::format("state.{}.exp_avg", b)] = tapegrad::Tensor<float>::zeros({vocab.size()});
  adam[fmt::format("state.{}.exp_avg_sq", b)] = tapegrad::Tensor<float>::zeros({vocab.size()});
  adam[fmt::format("state.{}.step", b)] = tapegrad::Tensor<float>::scalar(float(step));
  old_adam.load_state_dict(adam);
  const auto without_checksum = [](const fs::path& file) {
    auto metadata = tapegrad::io::safetensors::File(file.string()).metadata();
    metadata.erase("tapegrad.checksum");
    return metadata;
  };
  tt::save_checkpoint(dir.checkpoint().string(), old.module(), old_adam, step, without_checksum(dir.checkpoint()));
  tt::save_model(dir.model(), old.module(), without_checksum(dir.model()));
  REQUIRE(lm::has_output_bias(dir.model()));

  // Loaded with its bias: the logits are the written model's.
  const lm::ModelFolder loaded = lm::load_model_folder(run);
  CHECK(max_difference(*loaded.model, old.causal_lm()) == 0);
  CHECK(run_lm({"evaluate", "--run", run.string(), "--threads", "1"}).code == 0);
  CHECK(run_lm({"generate", "--run", run.string(), "--max-new-tokens", "5", "--threads", "1"}, "the movie").code == 0);

  // Not exportable as GPT-2: refused naming the bias and what to do, nothing written.
  const fs::path exported = tmp.path / "hf";
  const CliResult e = run_lm({"export", "--run", run.string(), "--out", exported.string()});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("output_bias") && Catch::Contains("GPT2LMHeadModel") &&
                        Catch::Contains("train the run again"));
  CHECK_FALSE(fs::exists(exported / "model.safetensors"));

  // --resume trains it on, bias included.
  c.resume = true;
  CHECK_FALSE(lm::train(c, out, log, false).interrupted);
  const tapegrad::io::safetensors::File resumed(dir.model().string());
  REQUIRE(resumed.contains("output_bias"));
  CHECK(xt::amax(xt::abs(resumed.get_as<float>("output_bias") - bias.data()))() > 0);

  // And it fine-tunes.
  const fs::path text = repetitive_text(tmp.path), tuned = tmp.path / "tuned";
  const CliResult f =
      run_lm({"finetune", "--from", run.string(), "--text", text.string(), "--out", tuned.string(), "--steps", "4",
              "--eval-every", "2", "--warmup", "1", "--threads", "1", "--lora-rank", "0"});
  INFO(f.err);
  CHECK(f.code == 0);
  CHECK(lm::has_output_bias(tuned / "model.safetensors"));
}

TEST_CASE("train_lm finetune: a Llama folder with a SentencePiece tokenizer.model, full and LoRA", "[finetune]") {
  TempDir tmp;
  const fs::path base = llama_with_sentencepiece(tmp.path), text = repetitive_text(tmp.path);
  const lm::ModelFolder folder = lm::load_model_folder(base);
  CHECK_THAT(folder.tokenizer->description(), Catch::Contains("SentencePiece"));
  CHECK(folder.tokenizer->encode("the movie").front() == 1);  // <s> first, as LlamaTokenizer's add_bos_token
  for (const std::string rank : {"4", "0"}) {
    INFO("--lora-rank " << rank);
    const fs::path run = tmp.path / ("run" + rank), exported = tmp.path / ("hf" + rank);
    check_llama_finetune_learns(base, text, run, rank);

    const auto ppl = [&](const fs::path& f) {
      const CliResult p =
          run_lm({"perplexity", "--run", f.string(), "--text", text.string(), "--threads", "1", "--precision", "fp32"});
      INFO(p.err);
      REQUIRE(p.code == 0);
      return p.out.substr(0, p.out.find(':'));
    };
    // The continuation is decoded text: the prompt comes back as it was given, then pieces as words.
    const CliResult g = run_lm({"generate", "--run", run.string(), "--max-new-tokens", "6", "--threads", "1",
                                "--precision", "fp32", "--temperature", "0"},
                               "the movie was");
    INFO(g.err);
    REQUIRE(g.code == 0);
    REQUIRE(g.out.rfind("the movie was |", 0) == 0);
    CHECK(g.out.size() > std::string("the movie was |\n").size() + 3);
    CHECK(g.out.find("[id") == std::string::npos);

    const CliResult e = run_lm({"export", "--run", run.string(), "--out", exported.string()});
    INFO(e.err);
    REQUIRE(e.code == 0);
    CHECK_THAT(e.out, Catch::Contains("tokenizer.model"));
    CHECK(read_bytes(exported / "tokenizer.model") == read_bytes(base / "tokenizer.model"));
    CHECK(read_bytes(exported / "tokenizer_config.json") == read_bytes(base / "tokenizer_config.json"));
    const lm::ModelFolder tuned = lm::load_model_folder(run), reloaded = lm::load_model_folder(exported);
    CHECK(max_difference(*tuned.model, *reloaded.model) < (rank == "0" ? 1e-6 : 1e-4));
    const std::string review = "This movie was great, isn't it? 10/10 \xE2\x80\x94 a caf\xC3\xA9 film.";
    CHECK(reloaded.tokenizer->encode(review) == tuned.tokenizer->encode(review));
    CHECK(reloaded.tokenizer->decode(reloaded.tokenizer->encode(review)) == review);
    CHECK(ppl(run) == ppl(exported));
    CHECK(ppl(run) != ppl(base));
  }
}

TEST_CASE("train_lm finetune --resume after an interruption ends exactly where an uninterrupted run does",
          "[finetune]") {
  TempDir tmp;
  const fs::path base = llama_with_words(tmp.path), text = tmp.path / "text.txt";
  lm::FinetuneConfig c;
  c.from = base.string();
  c.text = text.string();
  c.steps = 8;
  c.eval_every = 3;
  c.warmup = 1;
  c.lr = 0.05;
  c.lora_dropout = 0.1;  // its generator must come back too
  c.threads = 1;
  c.precision = "fp32";
  std::ostringstream out, log;
  c.out = (tmp.path / "whole").string();
  REQUIRE_FALSE(lm::finetune(c, out, log, false).interrupted);
  c.out = (tmp.path / "parts").string();
  CHECK(lm::finetune(c, out, log, false, [](std::int64_t step) { return step == 5; }).interrupted);
  const CliResult r = run_lm({"finetune", "--resume", "--out", c.out, "--threads", "1"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(read_bytes(tmp.path / "parts" / "model.safetensors") == read_bytes(tmp.path / "whole" / "model.safetensors"));
  const CliResult conflict = run_lm({"finetune", "--resume", "--out", c.out, "--lora-rank", "2"});
  CHECK(conflict.code == 2);
  CHECK_THAT(conflict.err, Catch::Contains("--lora-rank 2 differs from 8"));
}

TEST_CASE("train_lm finetune, export, perplexity: bad inputs are refused naming the problem", "[finetune]") {
  TempDir tmp;
  const fs::path base = llama_with_words(tmp.path), text = tmp.path / "text.txt", out = tmp.path / "out";
  const auto refused = [&](std::vector<std::string> args, const std::string& expected, int code = 2) {
    INFO(fmt::format("{}", fmt::join(args, " ")));
    const CliResult r = run_lm(std::move(args));
    CHECK(r.code == code);
    CHECK_THAT(r.err, Catch::Contains(expected));
    CHECK_FALSE(fs::exists(out / "config.json"));
  };
  const auto with = [&](std::vector<std::string> extra, const fs::path& from = {}) {
    auto args = finetune_args(from.empty() ? base : from, text, out);
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  refused({"finetune", "--text", text.string(), "--out", out.string()}, "--from is required");
  refused(with({}, (tmp.path / "nowhere").string()), "does not exist");
  refused(with({}, text.string()), "is a file, not a model folder");
  refused(with({}, tmp.path.string()), "has no config.json");
  refused(with({"--reviews", "pos"}), "give one of them");
  refused({"finetune", "--from", base.string(), "--reviews", "great", "--out", out.string()},
          "--reviews great is not one of pos|neg");
  refused(with({"--lora-targets", "q_proj,nope"}), "target module \"nope\" matches no module");
  refused(with({"--lora-targets", "q_proj,,v_proj"}), "names an empty module");
  // A folder without tokenizer files, and a tokenizer with more words than the model's vocabulary.
  const fs::path bare = tmp.path / "bare";
  fs::create_directories(bare);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(kPretrained / "llama_f32" / f, bare / f);
  refused(with({}, bare.string()), "has no tokenizer", 1);
  TempDir big;
  const fs::path large = llama_with_words(big.path, 400);
  refused(with({}, large.string()), "beyond the model's vocabulary of 300", 1);
  // Missing weights are named by the reader.
  fs::remove(bare / "model.safetensors");
  fs::copy_file(base / "tokenizer.json", bare / "tokenizer.json");
  refused(with({}, bare.string()), "has neither model.safetensors", 1);
  refused({"export", "--run", base.string(), "--out", out.string(), "--adapter"}, "has no LoRA adapters");
  refused({"perplexity", "--run", base.string()}, "--text FILE or --reviews pos|neg");
  refused({"perplexity", "--run", base.string(), "--text", (tmp.path / "none.txt").string()}, "does not exist");
}
