#pragma once
// batch_norm_backward written with other ops (kernels/composite/norm.cpp): the composite every
// backend without a kernel of its own takes, and the one the CPU kernel hands a channels-last
// input to (Note [Channels-last batch norm backward], kernels/cpu/norm.cpp).
#include <optional>

#include <xten/dispatch/op_handles.h>

namespace xten {

TensorTriple batch_norm_backward_by_ops(const Tensor& grad_output, const Tensor& input,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& running_mean,
                                        const std::optional<Tensor>& running_var, bool training,
                                        double eps);

}  // namespace xten
