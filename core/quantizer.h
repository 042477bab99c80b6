#pragma once
// Quantizer: how a quantized tensor's integers map to real values (docs/quantization.md).
//   per-tensor affine:  real = (q - zero_point) * scale
//   per-channel affine: real = (q - zero_points[c]) * scales[c], c the index along `axis`
// A quantized tensor (dtype quint8 / qint8 / qint32) holds one, immutable and shared by its
// views; the kernels that take quantized tensors live in quantization/.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <xten/core/scalar_type.h>

namespace xten {

// PyTorch's torch.qscheme values. A tensor is PerTensorAffine or PerChannelAffine; the
// symmetric schemes name how an observer chooses its parameters (zero point 0 for qint8).
enum class QScheme : int8_t {
  PerTensorAffine,
  PerChannelAffine,
  PerTensorSymmetric,
  PerChannelSymmetric,
};
const char* to_string(QScheme s);  // "per_tensor_affine", ...

struct Quantizer {
  QScheme scheme = QScheme::PerTensorAffine;
  ScalarType dtype = kQUInt8;  // the quantized dtype
  double scale = 1.0;          // per tensor
  int64_t zero_point = 0;
  std::vector<double> scales;  // per channel
  std::vector<int64_t> zero_points;
  int64_t axis = 0;

  // Checks the parameters (positive finite scales, zero points in the dtype's range) naming
  // `op`, and returns the quantizer to share.
  static std::shared_ptr<const Quantizer> per_tensor(const char* op, ScalarType dtype, double scale,
                                                     int64_t zero_point);
  static std::shared_ptr<const Quantizer> per_channel(const char* op, ScalarType dtype,
                                                      std::vector<double> scales,
                                                      std::vector<int64_t> zero_points,
                                                      int64_t axis);
  bool per_channel() const { return scheme == QScheme::PerChannelAffine; }
  bool same_as(const Quantizer& o) const;
};

// The range of a quantized dtype's integers: [0, 255], [-128, 127], [INT32_MIN, INT32_MAX].
int64_t quant_min(ScalarType dtype);
int64_t quant_max(ScalarType dtype);

}  // namespace xten
