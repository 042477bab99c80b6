// Reductions written with other ops (valid on every backend).
#include <vector>

#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

// log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max over dim, so nothing overflows;
// an infinite m (all -inf, or a +inf) is taken out as 0 so that inf - inf gives no NaN.
Tensor logsumexp_kernel(const Tensor& self, IntArrayRef dim, bool keepdim) {
  const Tensor x = is_floating_type(self.dtype()) ? self : self.to(kFloat);
  if (x.numel() == 0) return log(sum(exp(x), dim, keepdim));
  Tensor m = amax(x, dim, /*keepdim=*/true);
  m = where(isinf(m), zeros_like(m), m);
  Tensor out = log(sum(exp(x - m), dim, /*keepdim=*/true)) + m;
  if (keepdim) return out;
  // A 0-dim input takes dim 0 or -1, as a 1-dim one (wrap_dim): one slot at least.
  std::vector<bool> reduced(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)), dim.empty());
  for (int64_t d : dim) reduced[wrap_dim("logsumexp", d, x.dim())] = true;
  DimVector shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!reduced[d]) shape.push_back(x.size(d));
  return out.view(shape);
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("logsumexp", logsumexp_kernel);
}

}  // namespace xten
