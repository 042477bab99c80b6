#pragma once
// gradcheck / gradgradcheck (PyTorch's meaning): compare the gradients autograd computes with
// central finite differences, in float64 on the CPU.
#include <functional>
#include <string>
#include <vector>

#include <xten/core/tensor.h>

namespace xten::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-3;
  bool raise_exception = true;  // throw ValueError with the first mismatch, or return false
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Checks fn's Jacobian with respect to each input that requires grad. The inputs must be
// float64 CPU tensors (any layout; none may overlap itself).
bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options = {});

// Checks the second derivative: gradcheck of (inputs, v) -> grad(fn(inputs), inputs, v) with a
// random v, computed with create_graph=true.
bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& options = {});

}  // namespace xten::autograd
