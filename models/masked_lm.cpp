#include "tapegrad/models/masked_lm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/embedding.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/shape_ops.hpp"

namespace tapegrad::models {

template <typename T>
TransformerMaskedLM<T>::TransformerMaskedLM(const TransformerClassifierOptions& o, Generator& gen) : options(o) {
  o.validate();
  dropout_gen_ = this->register_dropout_generator(gen);
  this->register_embedding(*this, o, gen);
  this->register_positions_and_dropout(*this, o, o.dropout, gen, dropout_gen_);
  encoder = this->register_module("encoder", make_classifier_encoder<T>(o, gen, dropout_gen_));
  mlm_dense = this->register_module("mlm_dense", std::make_shared<nn::Linear<T>>(o.d_model, o.d_model, gen));
  mlm_norm = this->register_module("mlm_norm", std::make_shared<nn::LayerNorm<T>>(o.d_model));
  mlm_bias = this->register_parameter("mlm_bias", Tensor<T>::zeros({o.vocab_size}));
}

template <typename T>
Tensor<T> TransformerMaskedLM<T>::encode(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const {
  if (ids.dimension() != 2 || ids.shape() != padding_mask.shape()) {
    throw ShapeError(fmt::format("TransformerMaskedLM: ids {} and padding_mask {} must both be [batch, length]",
                                 format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  if (ids.shape(1) == 0 || ids.shape(1) > options.max_len) {
    throw ShapeError(fmt::format("TransformerMaskedLM: sequence length {} is outside [1, max_len = {}]", ids.shape(1),
                                 options.max_len));
  }
  const Tensor<T> h = this->add_positions(scaled_lookup(*this->embedding, ids));
  return encoder->forward(h, {}, nn::AttentionMask<T>(padding_mask));
}

template <typename T>
std::pair<Tensor<T>, xt::xarray<std::int64_t>> TransformerMaskedLM<T>::predict(const xt::xarray<std::int64_t>& ids,
                                                                               const BoolArray& padding_mask,
                                                                               const xt::xarray<std::int64_t>& targets,
                                                                               std::int64_t ignore_index) const {
  if (targets.shape() != ids.shape()) {
    throw ShapeError(fmt::format("TransformerMaskedLM: targets {} and ids {} differ in shape",
                                 format_shape(shape_of(targets)), format_shape(shape_of(ids))));
  }
  const Tensor<T> hidden = encode(ids, padding_mask);
  std::vector<std::int64_t> rows, wanted;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets.data()[i] != ignore_index) {
      rows.push_back(static_cast<std::int64_t>(i));
      wanted.push_back(targets.data()[i]);
    }
  }
  const std::size_t m = rows.size(), d = options.d_model;
  xt::xarray<std::int64_t> picked = xt::xarray<std::int64_t>::from_shape({m});
  std::copy(rows.begin(), rows.end(), picked.begin());
  xt::xarray<std::int64_t> chosen_targets = xt::xarray<std::int64_t>::from_shape({m});
  std::copy(wanted.begin(), wanted.end(), chosen_targets.begin());
  // Only the chosen rows go through the head: the [M, vocab] projection is most of the cost.
  const Tensor<T> flat = reshape(hidden, {-1, static_cast<std::int64_t>(d)});
  const Tensor<T> at = tapegrad::embedding(flat, picked);  // row gather with a scatter-add backward
  const Tensor<T> h = mlm_norm->forward(gelu(mlm_dense->forward(at)));
  return {linear(h, this->embedding->weight, mlm_bias), std::move(chosen_targets)};
}

template <typename T>
Tensor<T> TransformerMaskedLM<T>::loss(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                       const xt::xarray<std::int64_t>& targets, std::int64_t ignore_index) const {
  auto [logits, wanted] = predict(ids, padding_mask, targets, ignore_index);
  return cross_entropy(logits, wanted);
}

template <typename T>
std::vector<std::string> load_pretrained_encoder(TransformerClassifier<T>& classifier,
                                                 const io::safetensors::File& file) {
  const auto fresh = [](const std::string& name) {
    return name.rfind("classifier.", 0) == 0 || name.rfind("ngrams.", 0) == 0 || name.rfind("ngram_proj.", 0) == 0 ||
           name == "cls_token";
  };
  const auto encoder_part = [](const std::string& name) {
    return name.rfind("embedding.", 0) == 0 || name.rfind("pos_encoding.", 0) == 0 || name.rfind("encoder.", 0) == 0;
  };
  StateDict<T> target;
  for (auto& [name, tensor] : classifier.state_dict())
    if (!fresh(name)) target.emplace(name, tensor);
  std::vector<std::string> problems, loaded;
  for (const auto& [name, tensor] : target) {
    if (!file.contains(name)) {
      problems.push_back(fmt::format("missing {} {} (the classifier's)", name, format_shape(tensor.shape())));
    } else if (file.shape(name) != tensor.shape()) {
      problems.push_back(fmt::format("{} is {} in the file but {} in the classifier", name,
                                     format_shape(file.shape(name)), format_shape(tensor.shape())));
    } else if (file.dtype(name) != io::safetensors::dtype_of<T>()) {
      problems.push_back(fmt::format("{} is {} in the file but {} in the classifier", name,
                                     io::safetensors::dtype_name(file.dtype(name)),
                                     io::safetensors::dtype_name(io::safetensors::dtype_of<T>())));
    }
  }
  for (const auto& name : file.names()) {
    if (encoder_part(name) && target.count(name) == 0) {
      problems.push_back(
          fmt::format("unexpected {} {}: the classifier has no such tensor", name, format_shape(file.shape(name))));
    }
  }
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += "\n  " + p;
    throw std::runtime_error(
        fmt::format("{}: does not fit the classifier's embedding and encoder:{}", file.path(), text));
  }
  for (auto& [name, tensor] : target) {
    tensor.mutable_data() = file.get<T>(name);
    loaded.push_back(name);
  }
  return loaded;
}

template std::vector<std::string> load_pretrained_encoder<float>(TransformerClassifier<float>&,
                                                                 const io::safetensors::File&);
template std::vector<std::string> load_pretrained_encoder<double>(TransformerClassifier<double>&,
                                                                  const io::safetensors::File&);
template class TransformerMaskedLM<float>;
template class TransformerMaskedLM<double>;

}  // namespace tapegrad::models
