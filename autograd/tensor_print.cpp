// operator<< for Tensor: a port of torch 1.13's torch/_tensor_str.py (default print options:
// precision 4, threshold 1000, edgeitems 3, linewidth 80), so a tensor prints as torch prints it.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

namespace {

constexpr int kPrecision = 4;
constexpr std::size_t kThreshold = 1000;  // more elements than this are summarised
constexpr std::size_t kEdgeItems = 3;
constexpr long kLineWidth = 80;

// Python's "{:.Nf}" / "{:.Ne}" of a float: like printf, except that every NaN is "nan".
std::string py_fixed(double v, int precision) {
  if (std::isnan(v)) return "nan";
  return fmt::format("{:.{}f}", v, precision);
}
std::string py_sci(double v, int precision) {
  if (std::isnan(v)) return "nan";
  return fmt::format("{:.{}e}", v, precision);
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// torch's _Formatter: one width and one notation for every element printed. It looks at the finite
// nonzero values (of the summarised data when summarising): whole numbers print as "3.", a ratio of
// the largest to the smallest magnitude above 1000, a magnitude above 1e8 or (for non-integers) below
// 1e-4 switches to scientific notation, and everything else gets 4 decimals.
class Formatter {
 public:
  explicit Formatter(const std::vector<double>& values) {
    std::vector<double> finite;
    for (double v : values)
      if (std::isfinite(v) && v != 0) finite.push_back(v);
    if (finite.empty()) return;
    double lo = std::abs(finite[0]), hi = lo;
    for (double v : finite) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double v : finite) {
      if (sci_mode_)
        width_ = std::max(width_, py_sci(v, kPrecision).size());
      else if (int_mode_)
        width_ = std::max(width_, py_fixed(v, 0).size() + 1);
      else
        width_ = std::max(width_, py_fixed(v, kPrecision).size());
    }
  }

  std::size_t width() const { return width_; }

  std::string format(double v) const {
    std::string s;
    if (sci_mode_) {
      s = py_sci(v, kPrecision);
    } else if (int_mode_) {
      s = py_fixed(v, 0);
      if (std::isfinite(v)) s += ".";
    } else {
      s = py_fixed(v, kPrecision);
    }
    return pad_left(s, width_);
  }

 private:
  bool int_mode_ = true;
  bool sci_mode_ = false;
  std::size_t width_ = 1;
};

// A row-major array seen as nested dims, as the Python code walks tensor[i].
template <typename T>
struct View {
  const T* data;
  const Shape& shape;
  std::vector<std::size_t> strides;
};

// The indices of dim d that are printed: all, or the first and last kEdgeItems when summarising.
std::vector<std::size_t> shown(std::size_t size, bool summarize) {
  std::vector<std::size_t> out;
  if (summarize && size > 2 * kEdgeItems) {
    for (std::size_t i = 0; i < kEdgeItems; ++i) out.push_back(i);
    for (std::size_t i = size - kEdgeItems; i < size; ++i) out.push_back(i);
  } else {
    for (std::size_t i = 0; i < size; ++i) out.push_back(i);
  }
  return out;
}

// get_summarized_data: the values the formatter sees.
template <typename T>
void collect(const View<T>& v, std::size_t d, std::size_t offset, bool summarize, std::vector<double>& out) {
  if (d == v.shape.size()) {
    out.push_back(static_cast<double>(v.data[offset]));
    return;
  }
  for (std::size_t i : shown(v.shape[d], summarize)) collect(v, d + 1, offset + i * v.strides[d], summarize, out);
}

// _tensor_str_with_formatter from dim d on.
template <typename T>
std::string tensor_str(const View<T>& v, std::size_t d, std::size_t offset, long indent, bool summarize,
                       const Formatter& f) {
  const std::size_t rest = v.shape.size() - d;
  if (rest == 0) return f.format(static_cast<double>(v.data[offset]));
  const std::size_t size = v.shape[d];
  const bool cut = summarize && size > 2 * kEdgeItems;
  std::vector<std::string> items;
  if (rest == 1) {  // _vector_str
    const long element_length = static_cast<long>(f.width()) + 2;
    // floor((80 - indent) / length), at least 1 (a negative quotient truncated toward 0 is also < 1).
    const long per_line = std::max(1L, (kLineWidth - indent) / element_length);
    for (std::size_t i : shown(size, summarize)) {
      if (cut && i == size - kEdgeItems) items.push_back(" ...");
      items.push_back(f.format(static_cast<double>(v.data[offset + i * v.strides[d]])));
    }
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += i % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
      out += items[i];
    }
    return out + "]";
  }
  for (std::size_t i : shown(size, summarize)) {
    if (cut && i == size - kEdgeItems) items.push_back("...");
    items.push_back(tensor_str(v, d + 1, offset + i * v.strides[d], indent + 1, summarize, f));
  }
  const std::string separator = "," + std::string(rest - 1, '\n') + std::string(indent + 1, ' ');
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i > 0 ? separator : "") + items[i];
  return out + "]";
}

// "log_softmax" -> "LogSoftmaxBackward", after torch's node names (LogSoftmaxBackward0).
std::string backward_name(const std::string& op) {
  std::string out;
  bool upper = true;
  for (char c : op) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Backward";
}

// _add_suffixes: ", suffix" on the same line while it fits in kLineWidth, else on a new line.
std::string add_suffixes(const std::string& text, const std::vector<std::string>& suffixes, std::size_t indent) {
  std::string out = text;
  const std::size_t newline = text.rfind('\n');
  long last_line =
      static_cast<long>(text.size()) - (newline == std::string::npos ? -1L : static_cast<long>(newline)) + 1;
  for (const auto& suffix : suffixes) {
    const long len = static_cast<long>(suffix.size());
    if (last_line + len + 2 > kLineWidth) {
      out += ",\n" + std::string(indent, ' ') + suffix;
      last_line = static_cast<long>(indent) + len;
    } else {
      out += ", " + suffix;
      last_line += len + 2;
    }
  }
  return out + ")";
}

template <typename T>
constexpr bool is_default_dtype = std::is_same_v<T, float>;

}  // namespace

template <typename T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& tensor) {
  if (!tensor.defined()) return os << "tensor(undefined)";
  const std::string prefix = "tensor(";
  const std::size_t indent = prefix.size();
  const Shape& shape = tensor.shape();
  std::vector<std::string> suffixes;
  std::string body;
  if (tensor.numel() == 0) {
    if (shape.size() != 1) suffixes.push_back("size=" + python_tuple(shape));
    body = "[]";
  } else {
    const bool summarize = tensor.numel() > kThreshold;
    const View<T> view{tensor.data().data(), shape, contiguous_strides(shape)};
    std::vector<double> values;
    collect(view, 0, 0, summarize, values);
    body = tensor_str(view, 0, 0, static_cast<long>(indent), summarize, Formatter(values));
  }
  if (!is_default_dtype<T>) suffixes.push_back("dtype=float64");
  if (!tensor.is_leaf())
    suffixes.push_back("grad_fn=<" + backward_name(tensor.grad_fn_name()) + ">");
  else if (tensor.requires_grad())
    suffixes.push_back("requires_grad=True");
  return os << add_suffixes(prefix + body, suffixes, indent);
}

template std::ostream& operator<< <float>(std::ostream&, const Tensor<float>&);
template std::ostream& operator<< <double>(std::ostream&, const Tensor<double>&);

}  // namespace tapegrad
