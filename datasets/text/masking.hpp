/// @file
/// BERT's masked-token recipe (Devlin et al. 2019, section 3.1, and its create_pretraining_data): of the
/// real tokens of each sequence 15% are chosen as prediction targets; of those, 80% are replaced by
/// `<mask>`, 10% by a random token and 10% are left unchanged; the loss is taken on the chosen ones only.
#pragma once

#include <cstdint>
#include <xtensor/xarray.hpp>

namespace tapegrad::datasets {

/// The masked-language-model recipe of BERT (Devlin et al. 2019): which tokens are chosen and what they become.
struct MaskingOptions {
  double mask_prob = 0.15;           ///< share of each sequence's real tokens chosen, in (0, 1]
  double replace_with_mask = 0.8;    ///< of the chosen ones, the share replaced by `<mask>`
  double replace_with_random = 0.1;  ///< the share replaced by a random token; the rest stays unchanged

  /// Throws std::invalid_argument naming the field and value.
  void validate() const;
};

/// A batch after masking: the model's input ids and, at the chosen positions only, the targets.
struct MaskedTokens {
  xt::xarray<std::int64_t> ids;      ///< [B, L]: the input, chosen tokens replaced as the recipe says
  xt::xarray<std::int64_t> targets;  ///< [B, L]: the original id where chosen, ignore_index elsewhere
  std::size_t chosen = 0;            ///< the number of chosen positions
};

/// Applies the recipe to ids [B, L] whose real tokens are where padding_mask [B, L] is false. In each row
/// with n real tokens, max(1, round(mask_prob * n)) of them (none when n = 0) are chosen uniformly
/// without replacement (a partial Fisher-Yates shuffle); then each chosen one draws u in [0, 1): u <
/// replace_with_mask gives mask_id, u < replace_with_mask + replace_with_random a token drawn uniformly
/// from the ordinary ids [2, vocab_size) other than mask_id (never `<pad>` or `<unk>`), and otherwise the
/// token stays. Every draw comes from a tapegrad::Generator seeded with seed ^ (0xD1B54A32D192ED03 *
/// (step + 1)), so a batch is masked the same way when a run is resumed, and differently at every step.
/// Throws std::invalid_argument for shapes that differ, a mask_id outside the vocabulary, or a
/// vocabulary with no ordinary token.
MaskedTokens mask_tokens(const xt::xarray<std::int64_t>& ids, const xt::xarray<bool>& padding_mask,
                         std::int64_t mask_id, std::size_t vocab_size, const MaskingOptions& options,
                         std::uint64_t seed, std::uint64_t step, std::int64_t ignore_index = -100);

}  // namespace tapegrad::datasets
