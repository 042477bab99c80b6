// multinomial: samples of category indices from rows of non-negative weights (docs/random.md,
// "multinomial"), written with other ops so that it runs on every backend and draws from the
// device's generator like rand.
//
// Without replacement (and for one sample with it), the exponential race: each category j gets
// the key p_j / e_j with e_j ~ Exp(1) drawn independently, and the num_samples largest keys in
// decreasing order are a draw without replacement, in the order a sequential draw would give
// them (the first is category j with probability p_j / sum p). With replacement, each sample is
// the category whose cumulative-weight interval holds u * total for a uniform u: the count of
// cumulative weights <= u * total, which never lands on a category of weight 0.
#include <algorithm>

#include <xten/core/error.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

const char* kOp = "multinomial";

Tensor multinomial_kernel(const Tensor& self, int64_t num_samples, bool replacement) {
  XTEN_CHECK(self.dim() == 1 || self.dim() == 2, ValueError, kOp,
             "expected 1-d or 2-d weights [categories] or [rows, categories], but got {}",
             self.sizes());
  XTEN_CHECK(is_floating_type(self.dtype()), NotImplementedError, kOp,
             "not implemented for dtype {} (weights must be floating point)",
             to_string(self.dtype()));
  XTEN_CHECK(num_samples > 0, ValueError, kOp, "num_samples must be positive, but got {}",
             num_samples);
  const int64_t categories = self.size(-1);
  XTEN_CHECK(categories > 0, ValueError, kOp, "the weights {} have no categories", self.sizes());
  XTEN_CHECK(replacement || num_samples <= categories, ValueError, kOp,
             "cannot draw {} samples without replacement from {} categories", num_samples,
             categories);
  const ScalarType m = self.dtype() == kDouble ? kDouble : kFloat;
  const Tensor p = self.to(m).reshape({-1, categories});
  const int64_t rows = p.size(0);
  if (rows == 0) return empty({0, num_samples}, kLong, self.device());
  // The weights' checks read them on the host (Note [Host reads]).
  XTEN_CHECK(isfinite(p).all().item<bool>() && !(p < 0).any().item<bool>(), ValueError, kOp,
             "the weights contain inf, NaN or a negative value");
  const Tensor positive = p > 0;
  const Tensor nonzero = positive.sum({-1});
  XTEN_CHECK(nonzero.min().item<int64_t>() > 0, ValueError, kOp,
             "a row of weights sums to 0 (every weight is 0)");
  XTEN_CHECK(replacement || nonzero.min().item<int64_t>() >= num_samples, ValueError, kOp,
             "cannot draw {} samples without replacement from a row with only {} categories of "
             "non-zero weight",
             num_samples, nonzero.min().item<int64_t>());
  Tensor out;
  if (!replacement || num_samples == 1) {
    // e = -log(1 - u) ~ Exp(1); a zero weight's key is -1, below every other key.
    const Tensor e = (-rand(p.sizes(), TensorOptions(m).device(p.device()))).log1p().neg();
    const Tensor key = where(positive, p / e, full({}, -1.0, TensorOptions(m).device(p.device())));
    out = std::get<1>(topk(key, num_samples, -1, true, true));
  } else {
    const Tensor cdf = cumsum(p, -1);
    const Tensor total = cdf.narrow(-1, categories - 1, 1);
    // The last category of non-zero weight, for a u * total that rounds up to the total.
    const Tensor last =
        (arange(categories, TensorOptions(kLong).device(p.device())) * positive).amax({-1}, true);
    // Samples in chunks, so that the [rows, chunk, categories] comparison stays small.
    const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 24) / (rows * categories));
    std::vector<Tensor> parts;
    for (int64_t s0 = 0; s0 < num_samples; s0 += chunk) {
      const int64_t n = std::min(chunk, num_samples - s0);
      const Tensor u = rand({rows, n}, TensorOptions(m).device(p.device())) * total;
      const Tensor idx = (cdf.unsqueeze(1) <= u.unsqueeze(2)).sum({-1});
      parts.push_back(minimum(idx, last));
    }
    out = parts.size() == 1 ? parts[0] : cat(parts, 1);
  }
  return self.dim() == 1 ? out.reshape({num_samples}) : out;
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("multinomial", multinomial_kernel);
}

}  // namespace xten
