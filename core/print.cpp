// Printing in PyTorch's repr style:
//   tensor([[1.0000, 2.5000],
//           [3.0000, 4.0000]], dtype=float16, device='xpu:0')
// dtype is shown unless float32, int64 or bool; device unless cpu. Tensors of more than
// kSummarizeThreshold elements show kEdgeItems items at each end of every dim, with "...".
#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>
#include <vector>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/tensor.h>
#include <xten/dispatch/dispatcher.h>

namespace xten {
namespace {

constexpr int64_t kSummarizeThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

// Formats every element the same way, with one width, chosen from the values shown.
class Formatter {
 public:
  Formatter(ScalarType dtype, const std::vector<double>& values) : dtype_(dtype) {
    if (!is_floating_type(dtype)) {
      for (double v : values) width_ = std::max(width_, format(v).size());
      return;
    }
    // As PyTorch: the mode and the width come from the nonzero finite values only.
    std::vector<double> nonzero;
    for (double v : values)
      if (std::isfinite(v) && v != 0) nonzero.push_back(v);
    int_mode_ =
        std::all_of(nonzero.begin(), nonzero.end(), [](double v) { return v == std::ceil(v); });
    if (!nonzero.empty()) {
      auto mag = [](double a, double b) { return std::abs(a) < std::abs(b); };
      const double mx = std::abs(*std::max_element(nonzero.begin(), nonzero.end(), mag));
      const double mn = std::abs(*std::min_element(nonzero.begin(), nonzero.end(), mag));
      sci_ = int_mode_ ? mx > 1e8 : (mx / mn > 1000.0 || mx > 1e8 || mn < 1e-4);
    }
    for (double v : nonzero) width_ = std::max(width_, format(v).size());
  }

  std::string operator()(double v) const {
    std::string s = format(v);
    return s.size() >= width_ ? s : std::string(width_ - s.size(), ' ') + s;
  }
  size_t width() const { return width_; }

 private:
  std::string format(double v) const {
    if (dtype_ == kBool) return v != 0 ? "True" : "False";
    if (!is_floating_type(dtype_)) return fmt::format("{}", static_cast<int64_t>(v));
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci_) return fmt::format("{:.4e}", v);
    if (int_mode_) return fmt::format("{:.0f}.", v);
    return fmt::format("{:.4f}", v);
  }
  ScalarType dtype_;
  bool int_mode_ = false;
  bool sci_ = false;
  size_t width_ = 0;
};

class Printer {
 public:
  Printer(const Tensor& t, bool summarize) : t_(t), summarize_(summarize) {
    DimVector idx(static_cast<size_t>(t.dim()));
    collect(0, idx);
  }

  std::string body(size_t indent) {
    fmt_ = std::make_unique<Formatter>(t_.is_quantized() ? kFloat : t_.dtype(), values_);
    pos_ = 0;
    DimVector idx(static_cast<size_t>(t_.dim()));
    std::string out;
    write(0, indent, out);
    return out;
  }

 private:
  // The indices shown along a dim: all, or the edges when summarizing.
  std::vector<int64_t> shown(int64_t size) const {
    std::vector<int64_t> ix;
    if (summarize_ && size > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i) ix.push_back(i);
      ix.push_back(-1);  // the "..." marker
      for (int64_t i = size - kEdgeItems; i < size; ++i) ix.push_back(i);
    } else {
      for (int64_t i = 0; i < size; ++i) ix.push_back(i);
    }
    return ix;
  }

  double value_at(const DimVector& idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t_.stride(static_cast<int64_t>(d));
    if (t_.is_quantized()) return quantized_value_at(idx, off);
    return visit_dtype<dtypes::kAll>("print", t_.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      return static_cast<double>(
          static_cast<opmath_t<T>>(static_cast<const T*>(t_.data_ptr())[off]));
    });
  }

  // A quantized tensor prints its real values, (q - zero_point) * scale, as PyTorch does.
  double quantized_value_at(const DimVector& idx, int64_t off) const {
    const Quantizer& q = *t_.impl()->quantizer();
    const double v =
        visit_dtype<dtypes::kIntegral>("print", underlying_type(t_.dtype()), [&](auto tag) {
          using T = typename decltype(tag)::type;
          return static_cast<double>(static_cast<const T*>(t_.data_ptr())[off]);
        });
    if (!q.per_channel()) return (v - static_cast<double>(q.zero_point)) * q.scale;
    const size_t c = static_cast<size_t>(idx[static_cast<size_t>(q.axis)]);
    return (v - static_cast<double>(q.zero_points[c])) * q.scales[c];
  }

  void collect(int64_t d, DimVector& idx) {
    if (d == t_.dim()) {
      values_.push_back(value_at(idx));
      return;
    }
    for (int64_t i : shown(t_.size(d))) {
      if (i < 0) continue;
      idx[d] = i;
      collect(d + 1, idx);
    }
  }

  void write(int64_t d, size_t indent, std::string& out) {
    if (d == t_.dim()) {
      out += (*fmt_)(values_[pos_++]);
      return;
    }
    out += "[";
    const auto ix = shown(t_.size(d));
    const bool last_dim = d == t_.dim() - 1;
    const size_t per_line =
        std::max<size_t>(1, static_cast<size_t>(kLineWidth - static_cast<int64_t>(indent) - 1) /
                                (fmt_->width() + 2));
    for (size_t k = 0; k < ix.size(); ++k) {
      if (k > 0) {
        if (last_dim) {
          out += ",";
          out += k % per_line == 0 ? "\n" + std::string(indent + 1, ' ') : " ";
        } else {
          out += "," + std::string(static_cast<size_t>(t_.dim() - d - 1), '\n') +
                 std::string(indent + 1, ' ');
        }
      }
      if (ix[k] < 0)
        out += last_dim ? " ..." : "...";
      else
        write(d + 1, indent + 1, out);
    }
    out += "]";
  }

  const Tensor& t_;
  bool summarize_;
  std::vector<double> values_;
  std::unique_ptr<Formatter> fmt_;
  size_t pos_ = 0;
};

}  // namespace

std::string Tensor::toString() const {
  if (!defined()) return "tensor(undefined)";
  // Printing reads values into the host program: a graph break (Note [Host reads]).
  detail::on_graph_break("print");
  const Tensor host = is_cpu() ? *this : [this] {
    const ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);  // the read, not a graph op
    return to(Device(kCPU));
  }();
  std::string s = "tensor(";
  std::vector<std::string> suffix;
  if (host.numel() == 0) {
    s += "[]";
    if (host.dim() != 1) suffix.push_back(fmt::format("size={}", to_string(host.sizes())));
  } else {
    Printer p(host, host.numel() > kSummarizeThreshold);
    s += p.body(7);
  }
  if (is_quantized() && !(host.numel() == 0 && host.dim() != 1))
    suffix.push_back(fmt::format("size={}", to_string(host.sizes())));
  if (dtype() != kFloat && dtype() != kLong && dtype() != kBool)
    suffix.push_back(fmt::format("dtype={}", dtype_name(dtype())));
  if (is_quantized()) {
    suffix.push_back(fmt::format("quantization_scheme={}", xten::to_string(qscheme())));
    if (qscheme() == QScheme::PerTensorAffine) {
      suffix.push_back(fmt::format("scale={}", q_scale()));
      suffix.push_back(fmt::format("zero_point={}", q_zero_point()));
    } else {
      suffix.push_back(fmt::format("scale={}", q_per_channel_scales().toString()));
      suffix.push_back(fmt::format("zero_point={}", q_per_channel_zero_points().toString()));
      suffix.push_back(fmt::format("axis={}", q_per_channel_axis()));
    }
  }
  if (!is_cpu()) suffix.push_back(fmt::format("device='{}'", device().str()));
  for (const auto& x : suffix) s += ", " + x;
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.toString();
}

}  // namespace xten
