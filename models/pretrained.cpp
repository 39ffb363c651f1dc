#include "tapegrad/models/pretrained.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <xtensor/xmanipulation.hpp>

#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/io/json.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/hf_config.hpp"
#include "tapegrad/models/llama.hpp"

namespace tapegrad::models {

namespace {

namespace fs = std::filesystem;
namespace st = io::safetensors;
using nlohmann::json;

// The tensors of a folder: model.safetensors, or the shards of model.safetensors.index.json.
class Checkpoint {
 public:
  explicit Checkpoint(const fs::path& dir) {
    const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
    if (fs::exists(single)) {
      add(single);
    } else if (fs::exists(index)) {
      const json map = io::read_json_file(index);
      const auto weight_map = map.find("weight_map");
      if (!map.is_object() || weight_map == map.end() || !weight_map->is_object()) {
        throw std::runtime_error(fmt::format("{}: has no \"weight_map\" object", index.string()));
      }
      std::map<std::string, const st::File*> opened;
      for (const auto& [name, file] : weight_map->items()) {
        if (!file.is_string()) {
          throw std::runtime_error(
              fmt::format("{}: weight_map[\"{}\"] must be a file name, got {}", index.string(), name, file.dump()));
        }
        const std::string shard = file.get<std::string>();
        // A shard is a file of this folder: no path may lead elsewhere.
        if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
          throw std::runtime_error(fmt::format("{}: weight_map[\"{}\"] names \"{}\", not a file of the folder",
                                               index.string(), name, shard));
        }
        if (!opened.count(shard)) opened[shard] = add(dir / shard);
        if (!opened[shard]->contains(name)) {
          throw std::runtime_error(
              fmt::format("{}: weight_map puts \"{}\" in {}, which has no such tensor", index.string(), name, shard));
        }
      }
    } else {
      const bool pickle = fs::exists(dir / "pytorch_model.bin") || fs::exists(dir / "pytorch_model.bin.index.json");
      throw std::runtime_error(fmt::format("{}: has neither model.safetensors nor model.safetensors.index.json{}",
                                           dir.string(),
                                           pickle ? " (pytorch_model.bin, a pickle, is not read: save the model "
                                                    "with safe_serialization=True)"
                                                  : ""));
    }
  }

  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  const st::File& file(const std::string& name) const { return *where_.at(name); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& kv : where_) out.push_back(kv.first);
    return out;
  }

 private:
  const st::File* add(const fs::path& path) {
    files_.push_back(std::make_unique<st::File>(path.string()));
    const st::File* f = files_.back().get();
    for (const auto& name : f->names()) {
      if (where_.count(name)) {
        throw std::runtime_error(fmt::format("{}: tensor \"{}\" is also in {}", path.string(), name,
                                             fs::path(where_[name]->path()).filename().string()));
      }
      where_[name] = f;
    }
    return f;
  }

  std::vector<std::unique_ptr<st::File>> files_;
  std::map<std::string, const st::File*> where_;
};

// A tensor of the Hugging Face file and whether it is the transpose of ours (GPT-2's Conv1D [in, out]).
struct HFName {
  std::string name;
  bool transposed = false;
};

// GPT's state_dict name -> GPT-2's, without the "transformer." prefix (lm_head.weight has none); nullopt
// for a tensor GPT-2 does not have (output_bias).
std::optional<HFName> gpt2_name(const std::string& ours) {
  static const std::map<std::string, HFName> layer{{"norm1.weight", {"ln_1.weight"}},
                                                   {"norm1.bias", {"ln_1.bias"}},
                                                   {"self_attn.in_proj_weight", {"attn.c_attn.weight", true}},
                                                   {"self_attn.in_proj_bias", {"attn.c_attn.bias"}},
                                                   {"self_attn.out_proj.weight", {"attn.c_proj.weight", true}},
                                                   {"self_attn.out_proj.bias", {"attn.c_proj.bias"}},
                                                   {"norm2.weight", {"ln_2.weight"}},
                                                   {"norm2.bias", {"ln_2.bias"}},
                                                   {"linear1.weight", {"mlp.c_fc.weight", true}},
                                                   {"linear1.bias", {"mlp.c_fc.bias"}},
                                                   {"linear2.weight", {"mlp.c_proj.weight", true}},
                                                   {"linear2.bias", {"mlp.c_proj.bias"}}};
  static const std::map<std::string, HFName> top{{"embedding.weight", {"wte.weight"}},
                                                 {"pos_encoding.weight", {"wpe.weight"}},
                                                 {"encoder.norm.weight", {"ln_f.weight"}},
                                                 {"encoder.norm.bias", {"ln_f.bias"}},
                                                 {"lm_head.weight", {"lm_head.weight"}}};
  if (const auto it = top.find(ours); it != top.end()) return it->second;
  static const std::regex block(R"(encoder\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (std::regex_match(ours, m, block)) {
    if (const auto it = layer.find(m[2].str()); it != layer.end()) {
      return HFName{"h." + m[1].str() + "." + it->second.name, it->second.transposed};
    }
  }
  return std::nullopt;
}

std::string llama_name(const std::string& ours) { return ours == "lm_head.weight" ? ours : "model." + ours; }

template <typename T>
xt::xarray<T> transposed(const xt::xarray<T>& a) {
  return xt::xarray<T>(xt::transpose(a));
}

// A model of the options that options_of reads from dir's config, for the checkpoint's tensors to
// overwrite. What the model refuses is a std::runtime_error naming that config.json.
template <typename Model, typename Options>
std::shared_ptr<Model> build(Options (*options_of)(const json&, const std::string&), const json& config,
                             const fs::path& dir) {
  const std::string where = (dir / "config.json").string();
  const Options options = options_of(config, where);
  Generator gen(0);
  try {
    return std::make_shared<Model>(options, gen);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
  }
}

// Loads state (aliasing a model's tensors) from the checkpoint: hf names each of ours; skip says which
// other tensors of the file are not weights. Every problem is reported together, naming the file's names.
template <typename T>
void load_weights(const Checkpoint& checkpoint, StateDict<T> state, const std::function<HFName(const std::string&)>& hf,
                  const std::function<bool(const std::string&)>& skip, const std::string& where) {
  std::vector<std::string> problems;
  std::set<std::string> used;
  StateDict<T> source;
  for (const auto& [ours, tensor] : state) {
    const HFName h = hf(ours);
    if (!checkpoint.contains(h.name)) {
      problems.push_back(fmt::format("missing \"{}\"", h.name));
      continue;
    }
    used.insert(h.name);
    const st::File& file = checkpoint.file(h.name);
    const std::string in = fs::path(file.path()).filename().string();
    Shape expected = tensor.shape();
    if (h.transposed) std::reverse(expected.begin(), expected.end());
    if (file.shape(h.name) != expected) {
      problems.push_back(fmt::format("\"{}\" has shape {} in {}, the config implies {}", h.name,
                                     format_shape(file.shape(h.name)), in, format_shape(expected)));
      continue;
    }
    const st::Dtype dtype = file.dtype(h.name);
    if (dtype != st::Dtype::F16 && dtype != st::Dtype::BF16 && dtype != st::Dtype::F32 && dtype != st::Dtype::F64) {
      problems.push_back(fmt::format("\"{}\" is {} in {}, not a floating dtype (F16, BF16, F32 or F64)", h.name,
                                     st::dtype_name(dtype), in));
      continue;
    }
    xt::xarray<T> values = file.get_as<T>(h.name);
    const auto bad = std::find_if(values.begin(), values.end(), [](T v) { return !std::isfinite(v); });
    if (bad != values.end()) {
      problems.push_back(fmt::format("\"{}\" holds {} at flat index {} in {}", h.name, *bad,
                                     static_cast<std::size_t>(bad - values.begin()), in));
      continue;
    }
    source[ours] = Tensor<T>(h.transposed ? transposed(values) : std::move(values));
  }
  for (const auto& name : checkpoint.names()) {
    if (!used.count(name) && !skip(name)) {
      problems.push_back(
          fmt::format("unexpected \"{}\" in {}", name, fs::path(checkpoint.file(name).path()).filename().string()));
    }
  }
  if (!problems.empty()) {
    std::string message = fmt::format("{}: from_pretrained: {} problem(s) with the weights:", where, problems.size());
    for (const auto& p : problems) message += "\n  " + p;
    throw std::runtime_error(message);
  }
  io::load_state_dict(state, source, /*strict=*/true);
}

template <typename T>
std::shared_ptr<CausalLM<T>> load_gpt2(const json& config, const fs::path& dir) {
  const auto model = build<GPT<T>>(gpt2_options, config, dir);
  const Checkpoint checkpoint(dir);
  const auto names = checkpoint.names();
  const bool prefixed =
      std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.rfind("transformer.", 0) == 0; });
  const auto hf = [&](const std::string& ours) {
    HFName h = *gpt2_name(ours);
    if (prefixed && ours != "lm_head.weight") h.name = "transformer." + h.name;
    return h;
  };
  // The causal-mask buffers older transformers saved with the weights, and a tied head's copy.
  static const std::regex mask_buffer(R"((transformer\.)?h\.\d+\.attn\.(bias|masked_bias))");
  const auto skip = [&](const std::string& name) {
    return std::regex_match(name, mask_buffer) || (model->options.tie_embeddings && name == "lm_head.weight");
  };
  load_weights<T>(checkpoint, model->state_dict(), hf, skip, dir.string());
  model->eval();
  return model;
}

template <typename T>
std::shared_ptr<CausalLM<T>> load_llama(const json& config, const fs::path& dir) {
  const auto model = build<Llama<T>>(llama_options, config, dir);
  const Checkpoint checkpoint(dir);
  const auto hf = [](const std::string& ours) { return HFName{llama_name(ours)}; };
  const auto skip = [&](const std::string& name) {
    const std::string inv_freq = "rotary_emb.inv_freq";
    return (name.size() > inv_freq.size() &&
            name.compare(name.size() - inv_freq.size(), inv_freq.size(), inv_freq) == 0) ||
           (model->options.tie_embeddings && name == "lm_head.weight");
  };
  load_weights<T>(checkpoint, model->state_dict(), hf, skip, dir.string());
  model->eval();
  return model;
}

template <typename T>
xt::xarray<float> as_float(const xt::xarray<T>& a) {
  return xt::xarray<float>(xt::cast<float>(a));
}

template <typename T>
json gpt2_tensors(const GPT<T>& model, std::map<std::string, st::Array>& out) {
  const GPTOptions& o = model.options;
  if (model.output_bias.defined()) {
    const auto& b = model.output_bias.data();
    const auto largest =
        b.size() ? *std::max_element(b.begin(), b.end(), [](T x, T y) { return std::abs(x) < std::abs(y); }) : T(0);
    if (largest != T(0)) {
      throw std::invalid_argument(fmt::format(
          "save_pretrained: this GPT's output_bias is nonzero (|value| up to {}), and GPT-2's lm_head has no bias",
          std::abs(largest)));
    }
  }
  // Scaled embeddings: the input table is embedding * sqrt(d_model), the head the embedding itself.
  const bool tied = o.tie_embeddings && !o.scale_embeddings;
  for (const auto& [ours, tensor] : model.state_dict()) {
    if (ours == "output_bias") continue;
    const HFName h = *gpt2_name(ours);
    const std::string name = ours == "lm_head.weight" ? h.name : "transformer." + h.name;
    out[name] = as_float<T>(h.transposed ? transposed(tensor.data()) : tensor.data());
  }
  if (model.sinusoidal) out["transformer.wpe.weight"] = as_float<T>(model.sinusoidal->pe.data());
  if (o.scale_embeddings) {
    const xt::xarray<T>& e = model.embedding->weight.data();
    out["transformer.wte.weight"] = as_float<T>(e * static_cast<T>(std::sqrt(static_cast<double>(o.d_model))));
    if (!model.lm_head) out["lm_head.weight"] = as_float<T>(e);
  }
  return gpt2_config(o, tied);
}

template <typename T>
json llama_tensors(const Llama<T>& model, std::map<std::string, st::Array>& out) {
  for (const auto& [ours, tensor] : model.state_dict()) out[llama_name(ours)] = as_float<T>(tensor.data());
  return llama_config(model.options);
}

}  // namespace

template <typename T>
std::shared_ptr<CausalLM<T>> from_pretrained(const std::string& dir) {
  const fs::path folder(dir);
  if (!fs::is_directory(folder)) throw std::runtime_error(fmt::format("{}: is not a folder", dir));
  const fs::path config_path = folder / "config.json";
  const json config = io::read_json_file(config_path);
  if (!config.is_object()) throw std::runtime_error(fmt::format("{}: is not a JSON object", config_path.string()));
  const auto type = config.find("model_type");
  if (type == config.end() || !type->is_string()) {
    throw std::runtime_error(fmt::format("{}: has no model_type (gpt2 or llama)", config_path.string()));
  }
  const std::string model_type = type->get<std::string>();
  if (model_type == "gpt2") return load_gpt2<T>(config, folder);
  if (model_type == "llama") return load_llama<T>(config, folder);
  throw std::runtime_error(
      fmt::format("{}: model_type \"{}\" is not supported (gpt2, llama)", config_path.string(), model_type));
}

template <typename T>
void save_pretrained(const CausalLM<T>& model, const std::string& dir) {
  std::map<std::string, st::Array> tensors;
  json config;
  if (const auto* gpt = dynamic_cast<const GPT<T>*>(&model)) {
    config = gpt2_tensors(*gpt, tensors);
  } else if (const auto* llama = dynamic_cast<const Llama<T>*>(&model)) {
    config = llama_tensors(*llama, tensors);
  } else {
    throw std::invalid_argument("save_pretrained: the model is neither a models::GPT nor a models::Llama");
  }
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw std::runtime_error(fmt::format("{}: cannot create the folder: {}", dir, error.message()));
  st::save_file((fs::path(dir) / "model.safetensors").string(), tensors, {{"format", "pt"}});
  io::write_file_atomically(fs::path(dir) / "config.json", config.dump(2) + "\n");
}

template <typename T>
std::string hugging_face_module_name(const CausalLM<T>& model, const std::string& name) {
  if (dynamic_cast<const Llama<T>*>(&model)) {
    const std::string hf = llama_name(name + ".weight");
    return hf.substr(0, hf.size() - 7);
  }
  if (!dynamic_cast<const GPT<T>*>(&model)) return name;
  // A module is named by its weight's name; the attention by its in-projection's (c_attn).
  for (const char* leaf : {".weight", ".in_proj_weight"}) {
    if (const auto h = gpt2_name(name + leaf)) {
      const std::string module = h->name.substr(0, h->name.size() - 7);
      return name == "lm_head" ? module : "transformer." + module;
    }
  }
  return name;
}

template std::shared_ptr<CausalLM<float>> from_pretrained<float>(const std::string&);
template std::shared_ptr<CausalLM<double>> from_pretrained<double>(const std::string&);
template void save_pretrained<float>(const CausalLM<float>&, const std::string&);
template void save_pretrained<double>(const CausalLM<double>&, const std::string&);
template std::string hugging_face_module_name<float>(const CausalLM<float>&, const std::string&);
template std::string hugging_face_module_name<double>(const CausalLM<double>&, const std::string&);

}  // namespace tapegrad::models
