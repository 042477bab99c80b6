#include <xten/core/quantizer.h>

#include <cmath>
#include <limits>

#include <xten/core/error.h>

namespace xten {

const char* to_string(QScheme s) {
  switch (s) {
    case QScheme::PerTensorAffine:
      return "per_tensor_affine";
    case QScheme::PerChannelAffine:
      return "per_channel_affine";
    case QScheme::PerTensorSymmetric:
      return "per_tensor_symmetric";
    case QScheme::PerChannelSymmetric:
      return "per_channel_symmetric";
  }
  return "unknown";
}

int64_t quant_min(ScalarType dtype) {
  return dtype == kQUInt8 ? 0 : dtype == kQInt8 ? -128 : std::numeric_limits<int32_t>::min();
}
int64_t quant_max(ScalarType dtype) {
  return dtype == kQUInt8 ? 255 : dtype == kQInt8 ? 127 : std::numeric_limits<int32_t>::max();
}

namespace {
void check_params(const char* op, ScalarType dtype, double scale, int64_t zero_point) {
  XTEN_CHECK(std::isfinite(scale) && scale > 0, ValueError, op,
             "scale must be positive and finite, got {}", scale);
  XTEN_CHECK(zero_point >= quant_min(dtype) && zero_point <= quant_max(dtype), ValueError, op,
             "zero_point {} is outside the range [{}, {}] of {}", zero_point, quant_min(dtype),
             quant_max(dtype), dtype_name(dtype));
}
}  // namespace

std::shared_ptr<const Quantizer> Quantizer::per_tensor(const char* op, ScalarType dtype,
                                                       double scale, int64_t zero_point) {
  XTEN_CHECK(is_quantized_type(dtype), TypeError, op,
             "dtype must be quint8, qint8 or qint32, got {}", dtype_name(dtype));
  check_params(op, dtype, scale, zero_point);
  auto q = std::make_shared<Quantizer>();
  q->scheme = QScheme::PerTensorAffine;
  q->dtype = dtype;
  q->scale = scale;
  q->zero_point = zero_point;
  return q;
}

std::shared_ptr<const Quantizer> Quantizer::per_channel(const char* op, ScalarType dtype,
                                                        std::vector<double> scales,
                                                        std::vector<int64_t> zero_points,
                                                        int64_t axis) {
  XTEN_CHECK(is_quantized_type(dtype), TypeError, op,
             "dtype must be quint8, qint8 or qint32, got {}", dtype_name(dtype));
  XTEN_CHECK(scales.size() == zero_points.size(), ValueError, op, "{} scales but {} zero points",
             scales.size(), zero_points.size());
  for (size_t c = 0; c < scales.size(); ++c) check_params(op, dtype, scales[c], zero_points[c]);
  auto q = std::make_shared<Quantizer>();
  q->scheme = QScheme::PerChannelAffine;
  q->dtype = dtype;
  q->scales = std::move(scales);
  q->zero_points = std::move(zero_points);
  q->axis = axis;
  return q;
}

bool Quantizer::same_as(const Quantizer& o) const {
  return scheme == o.scheme && dtype == o.dtype && scale == o.scale && zero_point == o.zero_point &&
         scales == o.scales && zero_points == o.zero_points && axis == o.axis;
}

}  // namespace xten
