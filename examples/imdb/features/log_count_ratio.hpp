// Naive Bayes' log-count ratios of two classes (Wang and Manning 2012, binarized: a feature counts
// once per document): per hashed n-gram bucket, the feature scale of HashedNgramBag, and per token
// of a vocabulary, the polarity ClauseNegation reads.
#pragma once

#include <cstdint>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/datasets/text/encode.hpp"

namespace imdb::features {

// Counts, for two classes, how many documents of each class hold each n-gram bucket (as
// nn::document_ngram_buckets finds them), and turns the counts into the log-count ratios r_b =
// log((p_b / |p|_1) / (q_b / |q|_1)), with p = alpha + the counts in class-1 documents and q = alpha +
// those in class-0 ones, over buckets 1 to num_buckets - 1; r_0 = 0. A bucket seen in neither class
// gets r = log(|q|_1 / |p|_1), near 0.
class NgramLogCountRatio {
 public:
  // Throws std::invalid_argument for num_buckets < 2 or max_n < 1.
  NgramLogCountRatio(std::size_t num_buckets, std::size_t max_n);
  // Counts the documents ids [B, L] with padding_mask [B, L] and labels [B], each 0 or 1 (anything
  // else, or a label count other than B, throws std::invalid_argument naming it).
  void add(const xt::xarray<std::int64_t>& ids, const tapegrad::BoolArray& padding_mask,
           const xt::xarray<std::int64_t>& labels);
  // The ratios [num_buckets]; alpha > 0 (else std::invalid_argument). A bucket held by fewer than
  // min_documents documents of either class together gets 0: its ratio would mostly restate the labels of
  // the few training documents that hold it.
  xt::xarray<double> ratio(double alpha = 1.0, std::size_t min_documents = 0) const;
  // Documents counted so far, per class.
  std::size_t documents(int label) const { return documents_[label == 0 ? 0 : 1]; }

 private:
  std::size_t num_buckets_, max_n_;
  std::vector<std::uint32_t> counts_[2];
  std::size_t documents_[2] = {0, 0};
};

// Each token's log-count ratio over a labelled dataset: log((p[w] + alpha) / |p + alpha|_1) - log((q[w]
// + alpha) / |q + alpha|_1), with p[w] (q[w]) the number of label-1 (label-0) examples that hold token
// w. Positive for words of positive reviews. Returns vocab_size values; throws std::invalid_argument
// for an id outside [0, vocab_size), a label other than 0 or 1, or alpha <= 0.
std::vector<double> token_log_count_ratios(const tapegrad::datasets::EncodedDataset& data, std::size_t vocab_size,
                                           double alpha = 1.0);

}  // namespace imdb::features
