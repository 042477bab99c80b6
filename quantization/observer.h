#pragma once
// Observers: they watch the float values that pass a point of a model during calibration and
// choose quantization parameters for it (docs/quantization.md, "Observers"). The formulas are
// PyTorch's (torch.ao.quantization): the range always holds 0; affine parameters map
// [min, max] onto [quant_min, quant_max]; symmetric ones put 0 at the middle; reduce_range
// drops one bit (uint8 [0, 127], int8 [-64, 63]) for CPUs whose int8 products saturate
// ("Saturation").
#include <memory>
#include <vector>

#include <xten/core/tensor.h>

namespace xten::quantization {

struct QParams {
  double scale = 1.0;
  int64_t zero_point = 0;
};

// The options every observer takes.
struct ObserverOptions {
  ScalarType dtype = kQUInt8;                  // quint8 or qint8
  QScheme qscheme = QScheme::PerTensorAffine;  // affine or symmetric (per channel for weights)
  bool reduce_range = false;
  ObserverOptions& with_dtype(ScalarType d) {
    dtype = d;
    return *this;
  }
  ObserverOptions& with_qscheme(QScheme q) {
    qscheme = q;
    return *this;
  }
  ObserverOptions& with_reduce_range(bool r) {
    reduce_range = r;
    return *this;
  }
};

// Parameters for [min_val, max_val] (PyTorch's calculate_qparams).
QParams choose_qparams(double min_val, double max_val, const ObserverOptions& o);
int64_t observer_quant_min(const ObserverOptions& o);
int64_t observer_quant_max(const ObserverOptions& o);

// A per-tensor observer.
class Observer {
 public:
  explicit Observer(ObserverOptions o);
  virtual ~Observer() = default;
  // Records x (a floating-point CPU tensor; NaN values are ignored by min/max).
  virtual void observe(const Tensor& x) = 0;
  // The parameters for what was observed; a ValueError naming `where` if nothing was.
  virtual QParams qparams(const char* where = "observer") const;
  bool observed() const { return observed_; }
  double min_val() const { return min_; }
  double max_val() const { return max_; }
  const ObserverOptions& options() const { return options_; }
  // x quantized with qparams().
  Tensor quantize(const Tensor& x) const;

 protected:
  ObserverOptions options_;
  bool observed_ = false;
  double min_ = 0, max_ = 0;
};

// The running minimum and maximum.
class MinMaxObserver : public Observer {
 public:
  explicit MinMaxObserver(ObserverOptions o = {}) : Observer(o) {}
  void observe(const Tensor& x) override;
};

// min and max moved towards each batch's by averaging_constant (the first batch sets them).
class MovingAverageMinMaxObserver : public Observer {
 public:
  explicit MovingAverageMinMaxObserver(ObserverOptions o = {}, double averaging_constant = 0.01)
      : Observer(o), c_(averaging_constant) {}
  void observe(const Tensor& x) override;

 private:
  double c_;
};

// A histogram of the values (2048 bins over the range seen so far); qparams() searches for the
// sub-range whose quantization has the least squared error (PyTorch's HistogramObserver search),
// so rare outliers do not stretch the scale.
class HistogramObserver : public Observer {
 public:
  explicit HistogramObserver(ObserverOptions o = {}, int64_t bins = 2048);
  void observe(const Tensor& x) override;
  QParams qparams(const char* where = "observer") const override;
  const std::vector<double>& histogram() const { return hist_; }

 private:
  double quantization_error(int64_t start_bin, int64_t end_bin) const;
  std::vector<double> hist_;
};

// Per-channel minimum and maximum along `axis` (weights: axis 0, the output channels); qint8
// symmetric by default (zero points 0, as oneDNN's int8 products take).
class PerChannelMinMaxObserver {
 public:
  explicit PerChannelMinMaxObserver(int64_t axis = 0, ObserverOptions o = ObserverOptions{
                                                          kQInt8, QScheme::PerChannelSymmetric});
  void observe(const Tensor& x);
  std::pair<std::vector<double>, std::vector<int64_t>> qparams(
      const char* where = "observer") const;
  // x quantized per channel with qparams().
  Tensor quantize(const Tensor& x) const;

 private:
  int64_t axis_;
  ObserverOptions options_;
  std::vector<double> mins_, maxs_;
};

}  // namespace xten::quantization
