#pragma once
// nn::init: in-place initialisers (PyTorch's torch.nn.init), outside the graph. The numbers come
// from xten's generator (manual_seed), so they differ from PyTorch's; the distributions are the
// same (docs/nn.md lists each layer's).
#include <string>

#include <xten/core/tensor.h>

namespace xten::nn::init {

// (fan_in, fan_out) of a weight: [out, in] for Linear, [out, in / groups, k...] for convolutions
// (the receptive field multiplies both). ValueError for fewer than 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// PyTorch's recommended gain: linear/conv/sigmoid 1, tanh 5/3, relu sqrt(2), leaky_relu
// sqrt(2 / (1 + slope^2)), selu 3/4.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

Tensor& uniform_(Tensor& t, double a = 0, double b = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
// U(-b, b), b = gain * sqrt(3 / fan) with fan = fan_in ("fan_in") or fan_out ("fan_out").
Tensor& kaiming_uniform_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu");
// N(0, std^2), std = gain / sqrt(fan).
Tensor& kaiming_normal_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
// U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& t, double gain = 1);
// N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, double gain = 1);
// N(mean, std^2) restricted to [a, b].
Tensor& trunc_normal_(Tensor& t, double mean = 0, double std = 1, double a = -2, double b = 2);
// A (semi-)orthogonal matrix times gain, as PyTorch's: t seen as rows = size(0) by the rest,
// from the QR decomposition of a standard normal matrix (Householder, in float64 on the CPU;
// Q's columns signed so that R's diagonal is positive). Rows orthonormal when rows <= cols,
// columns when rows >= cols.
Tensor& orthogonal_(Tensor& t, double gain = 1);

}  // namespace xten::nn::init
