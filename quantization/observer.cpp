#include <xten/quantization/observer.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <xten/dispatch/ops.h>
#include <xten/quantization/ops.h>

namespace xten::quantization {

namespace {
constexpr double kEps = std::numeric_limits<float>::epsilon();  // PyTorch's smallest scale

bool symmetric(QScheme q) {
  return q == QScheme::PerTensorSymmetric || q == QScheme::PerChannelSymmetric;
}

void check_options(const ObserverOptions& o) {
  XTEN_CHECK(o.dtype == kQUInt8 || o.dtype == kQInt8, TypeError, "observer",
             "observers choose quint8 or qint8 parameters, but got dtype {}", dtype_name(o.dtype));
}

// The float values of x on the CPU, NaN dropped from min/max.
std::pair<double, double> range_of(const char* op, const Tensor& x) {
  XTEN_CHECK(x.is_floating_point(), TypeError, op,
             "observes floating-point tensors, but got dtype {}", dtype_name(x.dtype()));
  const Tensor f = x.detach().to(Device(kCPU), kFloat).contiguous();
  const float* p = f.data_ptr<float>();
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t i = 0; i < f.numel(); ++i) {
    if (p[i] < lo) lo = p[i];
    if (p[i] > hi) hi = p[i];
  }
  return {lo, hi};
}
}  // namespace

int64_t observer_quant_min(const ObserverOptions& o) {
  if (o.dtype == kQUInt8) return 0;
  return o.reduce_range ? -64 : -128;
}
int64_t observer_quant_max(const ObserverOptions& o) {
  if (o.dtype == kQUInt8) return o.reduce_range ? 127 : 255;
  return o.reduce_range ? 63 : 127;
}

QParams choose_qparams(double min_val, double max_val, const ObserverOptions& o) {
  const double lo = std::min(min_val, 0.0), hi = std::max(max_val, 0.0);
  const int64_t qmin = observer_quant_min(o), qmax = observer_quant_max(o);
  QParams p;
  if (symmetric(o.qscheme)) {
    const double m = std::max(-lo, hi);
    p.scale = std::max(m / (static_cast<double>(qmax - qmin) / 2), kEps);
    p.zero_point = o.dtype == kQUInt8 ? (qmin + qmax + 1) / 2 : 0;
  } else {
    p.scale = std::max((hi - lo) / static_cast<double>(qmax - qmin), kEps);
    p.zero_point = qmin - static_cast<int64_t>(std::nearbyint(lo / p.scale));
    p.zero_point = std::min(qmax, std::max(qmin, p.zero_point));
  }
  return p;
}

Observer::Observer(ObserverOptions o) : options_(o) {
  check_options(o);
}

QParams Observer::qparams(const char* where) const {
  XTEN_CHECK(observed_, ValueError, where,
             "the observer saw no values: run calibration data through the prepared model before "
             "convert");
  return choose_qparams(min_, max_, options_);
}

Tensor Observer::quantize(const Tensor& x) const {
  const QParams p = qparams();
  return quantize_per_tensor(x, p.scale, p.zero_point, options_.dtype);
}

void MinMaxObserver::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const auto [lo, hi] = range_of("MinMaxObserver", x);
  min_ = observed_ ? std::min(min_, lo) : lo;
  max_ = observed_ ? std::max(max_, hi) : hi;
  observed_ = true;
}

void MovingAverageMinMaxObserver::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const auto [lo, hi] = range_of("MovingAverageMinMaxObserver", x);
  if (!observed_) {
    min_ = lo;
    max_ = hi;
  } else {
    min_ += c_ * (lo - min_);
    max_ += c_ * (hi - max_);
  }
  observed_ = true;
}

HistogramObserver::HistogramObserver(ObserverOptions o, int64_t bins)
    : Observer(o), hist_(static_cast<size_t>(bins), 0.0) {
  XTEN_CHECK(bins > 0, ValueError, "HistogramObserver", "bins must be positive, but got {}", bins);
}

// Each batch widens the range as needed: the old counts are spread over the new bins they
// overlap (in proportion), then the batch's values are counted in.
void HistogramObserver::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const auto [lo, hi] = range_of("HistogramObserver", x);
  if (!(lo <= hi)) return;  // all NaN
  const int64_t bins = static_cast<int64_t>(hist_.size());
  const double new_min = observed_ ? std::min(min_, lo) : lo;
  const double new_max = observed_ ? std::max(max_, hi) : hi;
  if (observed_ && (new_min != min_ || new_max != max_) && max_ > min_) {
    std::vector<double> next(hist_.size(), 0.0);
    const double old_w = (max_ - min_) / static_cast<double>(bins);
    const double new_w = (new_max - new_min) / static_cast<double>(bins);
    for (int64_t b = 0; b < bins; ++b) {
      if (hist_[static_cast<size_t>(b)] == 0) continue;
      const double b0 = min_ + static_cast<double>(b) * old_w, b1 = b0 + old_w;
      int64_t n = std::min(bins - 1, static_cast<int64_t>((b0 - new_min) / new_w));
      for (; n < bins; ++n) {
        const double n0 = new_min + static_cast<double>(n) * new_w, n1 = n0 + new_w;
        const double overlap = std::min(b1, n1) - std::max(b0, n0);
        if (overlap > 0)
          next[static_cast<size_t>(n)] += hist_[static_cast<size_t>(b)] * overlap / old_w;
        if (n1 >= b1) break;
      }
    }
    hist_ = std::move(next);
  } else if (observed_ && max_ == min_ && (new_min != min_ || new_max != max_)) {
    // Everything so far was one value: it moves to its bin of the new range.
    double total = 0;
    for (double& h : hist_) total += std::exchange(h, 0.0);
    const double w = (new_max - new_min) / static_cast<double>(bins);
    const int64_t b = std::min(bins - 1, static_cast<int64_t>((min_ - new_min) / w));
    hist_[static_cast<size_t>(b)] = total;
  }
  min_ = new_min;
  max_ = new_max;
  observed_ = true;
  const Tensor f = x.detach().to(Device(kCPU), kFloat).contiguous();
  const float* p = f.data_ptr<float>();
  const double w = (max_ - min_) / static_cast<double>(bins);
  for (int64_t i = 0; i < f.numel(); ++i) {
    if (std::isnan(p[i])) continue;
    const int64_t b = w > 0 ? std::min(bins - 1, static_cast<int64_t>((p[i] - min_) / w)) : 0;
    hist_[static_cast<size_t>(b)] += 1;
  }
}

// The squared error of quantizing the histogram with bins [start_bin, end_bin] spread over the
// dtype's 256 levels: each source bin's values are uniform within it (its density), each
// level's error is the integral of (value - level center)^2.
double HistogramObserver::quantization_error(int64_t start_bin, int64_t end_bin) const {
  const int64_t bins = static_cast<int64_t>(hist_.size());
  const double bin_w = (max_ - min_) / static_cast<double>(bins);
  constexpr double kLevels = 256;
  const double dst_w = bin_w * static_cast<double>(end_bin - start_bin + 1) / kLevels;
  if (dst_w == 0) return 0;
  auto norm = [](double d, double begin, double end) {
    return d * (end * end * end - begin * begin * begin) / 3;
  };
  double total = 0;
  for (int64_t b = 0; b < bins; ++b) {
    const double count = hist_[static_cast<size_t>(b)];
    if (count == 0) continue;
    const double density = count / bin_w;
    const double src_begin = static_cast<double>(b - start_bin) * bin_w,
                 src_end = src_begin + bin_w;
    const double first = std::clamp(std::floor(src_begin / dst_w), 0.0, kLevels - 1);
    const double last = std::clamp(std::floor(src_end / dst_w), 0.0, kLevels - 1);
    const double first_center = (first + 0.5) * dst_w, last_center = (last + 0.5) * dst_w;
    total += norm(density, src_begin - first_center, dst_w / 2);
    total += (last - first - 1) * norm(density, -dst_w / 2, dst_w / 2);
    total += norm(density, -dst_w / 2, src_end - last_center);
  }
  return total;
}

QParams HistogramObserver::qparams(const char* where) const {
  XTEN_CHECK(observed_, ValueError, where,
             "the observer saw no values: run calibration data through the prepared model before "
             "convert");
  const int64_t bins = static_cast<int64_t>(hist_.size());
  if (max_ == min_) return choose_qparams(min_, max_, options_);
  std::vector<double> cum(hist_.size());
  double total = 0;
  for (size_t b = 0; b < hist_.size(); ++b) cum[b] = total += hist_[b];
  // Shrink the range from the side that gives up fewer values, in steps of 1e-5 of them,
  // while the error keeps falling.
  constexpr double kStep = 1e-5;
  double alpha = 0, beta = 1, best = std::numeric_limits<double>::infinity();
  int64_t start = 0, end = bins - 1;
  while (alpha < beta) {
    const double next_alpha = alpha + kStep, next_beta = beta - kStep;
    int64_t l = start, r = end;
    while (l < end && cum[static_cast<size_t>(l)] < next_alpha * total) ++l;
    while (r > start && cum[static_cast<size_t>(r)] > next_beta * total) --r;
    int64_t next_start = start, next_end = end;
    if (l - start > end - r) {
      next_start = l;
      alpha = next_alpha;
    } else {
      next_end = r;
      beta = next_beta;
    }
    if (next_start == start && next_end == end) continue;
    const double err = quantization_error(next_start, next_end);
    if (err > best) break;
    best = err;
    start = next_start;
    end = next_end;
  }
  const double w = (max_ - min_) / static_cast<double>(bins);
  return choose_qparams(min_ + w * static_cast<double>(start),
                        min_ + w * static_cast<double>(end + 1), options_);
}

PerChannelMinMaxObserver::PerChannelMinMaxObserver(int64_t axis, ObserverOptions o)
    : axis_(axis), options_(o) {
  check_options(o);
}

void PerChannelMinMaxObserver::observe(const Tensor& x) {
  constexpr const char* op = "PerChannelMinMaxObserver";
  XTEN_CHECK(x.is_floating_point(), TypeError, op,
             "observes floating-point tensors, but got dtype {}", dtype_name(x.dtype()));
  XTEN_CHECK(axis_ >= 0 && axis_ < x.dim(), IndexError, op,
             "axis {} is out of range for a tensor of shape {}", axis_, x.sizes());
  const Tensor f = x.detach().to(Device(kCPU), kFloat).transpose(0, axis_).contiguous();
  const int64_t channels = f.size(0), inner = channels ? f.numel() / channels : 0;
  if (mins_.empty()) {
    mins_.assign(static_cast<size_t>(channels), std::numeric_limits<double>::infinity());
    maxs_.assign(static_cast<size_t>(channels), -std::numeric_limits<double>::infinity());
  }
  XTEN_CHECK(static_cast<int64_t>(mins_.size()) == channels, ValueError, op,
             "saw {} channels before and {} now", mins_.size(), channels);
  const float* p = f.data_ptr<float>();
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < inner; ++i) {
      const double v = p[c * inner + i];
      mins_[static_cast<size_t>(c)] = std::min(mins_[static_cast<size_t>(c)], v);
      maxs_[static_cast<size_t>(c)] = std::max(maxs_[static_cast<size_t>(c)], v);
    }
}

std::pair<std::vector<double>, std::vector<int64_t>> PerChannelMinMaxObserver::qparams(
    const char* where) const {
  XTEN_CHECK(!mins_.empty(), ValueError, where,
             "the observer saw no values: observe the weight before convert");
  std::vector<double> scales;
  std::vector<int64_t> zps;
  for (size_t c = 0; c < mins_.size(); ++c) {
    const QParams p = choose_qparams(std::isfinite(mins_[c]) ? mins_[c] : 0,
                                     std::isfinite(maxs_[c]) ? maxs_[c] : 0, options_);
    scales.push_back(p.scale);
    zps.push_back(p.zero_point);
  }
  return {scales, zps};
}

Tensor PerChannelMinMaxObserver::quantize(const Tensor& x) const {
  const auto [scales, zps] = qparams();
  return quantize_per_channel(x, tensor(scales, TensorOptions(kDouble)), tensor(zps), axis_,
                              options_.dtype);
}

}  // namespace xten::quantization
