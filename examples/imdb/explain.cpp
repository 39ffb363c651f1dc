#include "examples/imdb/explain.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>

#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/tokenizer.hpp"
#include "tapegrad/nn/ngram_hash.hpp"

namespace imdb {

namespace {

// Grad mode on for a scope (explain needs the tape even if a caller turned it off).
class GradMode {
 public:
  GradMode() : previous_(tapegrad::is_grad_enabled()) { tapegrad::set_grad_enabled(true); }
  ~GradMode() { tapegrad::set_grad_enabled(previous_); }
  GradMode(const GradMode&) = delete;
  GradMode& operator=(const GradMode&) = delete;

 private:
  bool previous_;
};

// The n-gram part's features of one review, as features::HashedNgramBag finds them
// (document_ngram_buckets over the negation-marked ids: each bucket once), with their shares of its
// weighted margin.
template <typename T>
std::vector<NgramContribution> ngram_contributions(const WideAndDeep<T>& model, const std::vector<std::int64_t>& ids,
                                                   const std::vector<std::string>& tokens) {
  const auto& bag = *model.wide;
  xt::xarray<std::int64_t> row = xt::xarray<std::int64_t>::from_shape({std::size_t{1}, ids.size()});
  std::copy(ids.begin(), ids.end(), row.begin());
  const auto marked = bag.negation.mark(row, tapegrad::BoolArray(xt::zeros<bool>(row.shape())));
  const auto& w = bag.weight.data();
  const double wide_weight = static_cast<double>(model.wide_weight_at(ids.size()));
  std::vector<NgramContribution> out;
  std::set<std::int64_t> seen;
  for (std::size_t n = 1; n <= bag.max_n; ++n) {
    for (std::size_t end = n; end <= ids.size(); ++end) {
      const std::int64_t* gram = marked.data() + (end - n);
      const std::int64_t bucket = tapegrad::nn::ngram_bucket(gram, n, bag.num_buckets);
      if (!seen.insert(bucket).second) continue;  // binarized: a bucket counts once
      const auto b = static_cast<std::size_t>(bucket);
      const double scale = bag.scale.defined() ? static_cast<double>(bag.scale.data()(b, 0)) : 1.0;
      NgramContribution c;
      for (std::size_t k = end - n; k < end; ++k) {
        if (!c.text.empty()) c.text += ' ';
        c.text += (marked.data()[k] < 0 ? "NOT_" : "") + tokens[k];
      }
      c.margin = wide_weight * scale * (static_cast<double>(w(b, 1)) - static_cast<double>(w(b, 0)));
      out.push_back(std::move(c));
    }
  }
  if (bag.negation_factor.defined()) {
    // Each negated word also counts as its plain self times the learned factor (once per word).
    const double factor = static_cast<double>(bag.negation_factor.data()(0));
    std::set<std::int64_t> plain_seen;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      if (marked.data()[k] >= 0) continue;
      const std::int64_t plain = ~marked.data()[k];
      const std::int64_t bucket = tapegrad::nn::ngram_bucket(&plain, 1, bag.num_buckets);
      if (!plain_seen.insert(bucket).second) continue;
      const auto b = static_cast<std::size_t>(bucket);
      const double scale = bag.scale.defined() ? static_cast<double>(bag.scale.data()(b, 0)) : 1.0;
      NgramContribution c;
      c.text = fmt::format("{} x {:.2f} (negated)", tokens[k], factor);
      c.margin = wide_weight * factor * scale * (static_cast<double>(w(b, 1)) - static_cast<double>(w(b, 0)));
      out.push_back(std::move(c));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const NgramContribution& a, const NgramContribution& b) {
    return std::abs(a.margin) > std::abs(b.margin);
  });
  return out;
}

}  // namespace

template <typename T>
Explanation explain_ids(WideAndDeep<T>& model, const std::vector<std::int64_t>& ids) {
  const std::size_t length = ids.size();
  if (length == 0) throw std::invalid_argument("explain: the review has no tokens");
  if (length > model.options.deep.max_len) {
    throw std::invalid_argument(
        fmt::format("explain: {} tokens are more than the model's max_len {}", length, model.options.deep.max_len));
  }
  const bool was_training = model.is_training();
  model.eval();
  GradMode grad_mode;
  // The backward pass below must not disturb gradients a caller may be accumulating.
  auto params = model.parameters();
  std::vector<std::optional<xt::xarray<T>>> saved_grads;
  for (const auto& p : params) saved_grads.push_back(p.has_grad() ? std::optional(p.grad()) : std::nullopt);

  xt::xarray<std::int64_t> batch = xt::xarray<std::int64_t>::from_shape({std::size_t{1}, length});
  std::copy(ids.begin(), ids.end(), batch.begin());
  const tapegrad::BoolArray no_padding = xt::zeros<bool>({std::size_t{1}, length});
  tapegrad::models::ClassifierTrace<T> trace;
  const auto parts = model.forward_parts(batch, no_padding, &trace);
  const auto logits = parts.total();

  Explanation e;
  if (parts.wide.defined()) {
    e.has_ngram_part = true;
    e.encoder_margin = static_cast<double>(parts.deep.data()(0, 1)) - static_cast<double>(parts.deep.data()(0, 0));
    e.ngram_margin = static_cast<double>(parts.wide_weight(0)) *
                     (static_cast<double>(parts.wide.data()(0, 1)) - static_cast<double>(parts.wide.data()(0, 0)));
  }
  e.ids = ids;
  e.total_tokens = length;
  e.cls = model.options.deep.pooling == tapegrad::models::Pooling::Cls;
  const auto& l = logits.data();
  for (std::size_t c = 0; c < logits.size(1); ++c) {
    e.logits.push_back(static_cast<double>(l(0, c)));
    if (e.logits[c] > e.logits[static_cast<std::size_t>(e.predicted)]) e.predicted = static_cast<std::int64_t>(c);
  }
  if (e.logits.size() >= 2) e.p_positive = 1.0 / (1.0 + std::exp(e.logits[0] - e.logits[1]));

  e.layers = trace.attention.size();
  e.positions = length + (e.cls ? 1 : 0);
  for (const auto& weights : trace.attention) {  // [1, H, P, P]
    e.heads = weights.size(1);
    const auto& w = weights.data();
    std::vector<std::vector<double>> layer(e.heads);
    const std::size_t cells = e.positions * e.positions;
    for (std::size_t h = 0; h < e.heads; ++h) {
      const T* begin = w.data() + h * cells;
      layer[h].assign(begin, begin + cells);
    }
    e.attention.push_back(std::move(layer));
  }

  // The n-gram part does not read the embeddings, so the encoder's logit has the total's gradient with
  // respect to them; backpropagating it alone spares the n-gram table's dense gradient.
  tapegrad::select(tapegrad::select(parts.deep, 0, 0), 0, e.predicted).backward();
  const auto& emb = trace.embeddings.data();  // [1, L, D]
  const auto& grad = trace.embeddings.grad();
  const std::size_t d = trace.embeddings.size(2);
  e.saliency.assign(length, 0.0);
  for (std::size_t t = 0; t < length; ++t)
    for (std::size_t k = 0; k < d; ++k)
      e.saliency[t] += static_cast<double>(grad(0, t, k)) * static_cast<double>(emb(0, t, k));

  for (std::size_t i = 0; i < params.size(); ++i) {
    if (saved_grads[i]) {
      params[i].set_grad(std::move(*saved_grads[i]));
    } else {
      params[i].zero_grad();
    }
  }
  model.train(was_training);
  return e;
}

template <typename T>
Explanation explain_text(WideAndDeep<T>& model, const tapegrad::datasets::Vocabulary& vocab, const Config& config,
                         const std::string& text, const LengthTemperature& temperature) {
  namespace ds = tapegrad::datasets;
  const std::vector<std::string> all = ds::tokenize(text);
  const ds::Kept kept =
      ds::truncation_window(all.size(), static_cast<std::size_t>(config.max_len), truncation_of(config));
  std::vector<std::string> tokens(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(kept.first));
  tokens.insert(tokens.end(), all.begin() + static_cast<std::ptrdiff_t>(kept.second), all.end());
  std::vector<std::int64_t> ids;
  for (const auto& token : tokens) ids.push_back(vocab.id(token));
  Explanation e = explain_ids(model, ids);
  if (model.wide) e.ngrams = ngram_contributions(model, ids, tokens);
  e.tokens = std::move(tokens);
  e.total_tokens = all.size();
  if (e.logits.size() >= 2) {
    e.p_positive = 1.0 / (1.0 + std::exp((e.logits[0] - e.logits[1]) * temperature.inverse(ids.size())));
  }
  return e;
}

template Explanation explain_ids(WideAndDeep<float>&, const std::vector<std::int64_t>&);
template Explanation explain_ids(WideAndDeep<double>&, const std::vector<std::int64_t>&);
template Explanation explain_text(WideAndDeep<float>&, const tapegrad::datasets::Vocabulary&, const Config&,
                                  const std::string&, const LengthTemperature&);
template Explanation explain_text(WideAndDeep<double>&, const tapegrad::datasets::Vocabulary&, const Config&,
                                  const std::string&, const LengthTemperature&);

}  // namespace imdb
