#pragma once
// The quantized ops (namespace `quantized` in the dispatcher; declared in quantization/ops.cpp,
// CPU kernels in kernels/cpu/quantized.cpp; docs/quantization.md). Quantized tensors themselves
// are core tensors of dtype quint8 / qint8 / qint32 with a quantizer (core/quantizer.h); their
// accessors (q_scale, int_repr, dequantize, ...) are Tensor methods.
#include <optional>

#include <xten/core/tensor.h>

namespace xten {

// round(self / scale) + zero_point, saturated to dtype's range (NaN -> zero_point); a
// channels-last input gives a channels-last result.
Tensor quantize_per_tensor(const Tensor& self, double scale, int64_t zero_point, ScalarType dtype);
// Likewise with scales[c] and zero_points[c] for index c along `axis`.
Tensor quantize_per_channel(const Tensor& self, const Tensor& scales, const Tensor& zero_points,
                            int64_t axis, ScalarType dtype);
// float32 (q - zero_point) * scale.
Tensor dequantize(const Tensor& self);

namespace quantized {

// conv2d of a quint8/qint8 input by a qint8 weight (symmetric: zero points 0; per tensor or per
// output channel) plus a float bias, relu'd if asked, requantized to (output_scale,
// output_zero_point) in the input's dtype; channels-last input in, channels-last out.
Tensor conv2d(const Tensor& qx, const Tensor& qweight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
              double output_scale, int64_t output_zero_point, bool relu = false);
// qx [..., in] @ qweight[out, in]^T + bias, likewise.
Tensor linear(const Tensor& qx, const Tensor& qweight, const std::optional<Tensor>& bias,
              double output_scale, int64_t output_zero_point, bool relu = false);
// A float input quantized on the fly (per tensor, from its range) by a qint8 weight: float32 out.
Tensor linear_dynamic(const Tensor& x, const Tensor& qweight, const std::optional<Tensor>& bias,
                      bool relu = false);
// (qa + qb) requantized to (scale, zero_point), relu'd if asked; operands of one shape.
Tensor add(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point, bool relu = false);

}  // namespace quantized
}  // namespace xten
