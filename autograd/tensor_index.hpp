/// @file
/// What an index list holds, as LibTorch spells Python's `x[0, 1:3, ..., None]`:
/// `x.index({0, Slice(1, 3), Ellipsis, None})` (the op itself is index() in autograd/indexing.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::indexing {

/// `None` in an index list: a new dim of size 1 (Python's x[None]); also an absent bound of a Slice.
inline constexpr std::nullopt_t None = std::nullopt;

/// The type of Ellipsis.
struct EllipsisIndexType {};
/// `...` in an index list: as many whole dims as the other entries leave (Python's x[..., 0]).
inline constexpr EllipsisIndexType Ellipsis{};

/// Python's start:stop:step, each bound optional as in torch::indexing::Slice: `Slice()` is `:`,
/// `Slice(1, None)` is `1:`, `Slice(None, -1)` is `:-1`, `Slice(None, None, 2)` is `::2`. Negative
/// bounds count from the end and both are clamped into the dim, as in Python; the step must be
/// positive (torch refuses a negative one too).
class Slice {
 public:
  Slice(std::optional<std::int64_t> start = None, std::optional<std::int64_t> stop = None,
        std::optional<std::int64_t> step = None)
      : start_(start), stop_(stop), step_(step.value_or(1)) {}
  std::optional<std::int64_t> start() const { return start_; }
  std::optional<std::int64_t> stop() const { return stop_; }
  std::int64_t step() const { return step_; }

 private:
  std::optional<std::int64_t> start_, stop_;
  std::int64_t step_;
};

/// One entry of an index list: an integer (selects one position and removes the dim), a Slice (keeps
/// the dim), None (inserts a dim of size 1) or Ellipsis (also written "..."). Tensors as indices
/// (torch's advanced indexing) are not among them: use index_select, gather or masked_fill.
class TensorIndex {
 public:
  enum class Kind { Integer, Slice, None, Ellipsis };

  template <typename I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  TensorIndex(I integer) : kind_(Kind::Integer), integer_(static_cast<std::int64_t>(integer)) {}
  TensorIndex(Slice slice) : kind_(Kind::Slice), slice_(slice) {}
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}
  /// "..." only, as LibTorch accepts it; any other string throws ShapeError.
  TensorIndex(const char* ellipsis) : kind_(Kind::Ellipsis) {
    if (ellipsis == nullptr || std::string_view(ellipsis) != "...")
      throw ShapeError(std::string("index: the only string an index list takes is \"...\", got \"") +
                       (ellipsis ? ellipsis : "(null)") + "\"");
  }

  Kind kind() const { return kind_; }
  std::int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }

 private:
  Kind kind_;
  std::int64_t integer_ = 0;
  Slice slice_;
};

}  // namespace tapegrad::indexing
