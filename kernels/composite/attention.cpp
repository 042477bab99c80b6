// scaled_dot_product_attention: the path chooser, the math path, and the closed form of the
// flash kernels' backward (docs/attention.md).
//
// Note [Attention paths]
// scaled_dot_product_attention brings its operands to the flash kernel's [B, H, L, E] form
// (leading dims broadcast and merged into B, dim -3 the heads, grouped-query heads left for the
// kernel) and calls _scaled_dot_product_flash_attention, whose CPU and XPU kernels never hold
// the L x S scores. The flash kernels do not take dropout and give no gradient to the mask, so
// a call with dropout_p > 0, or with a mask that requires grad while grad mode is on, takes the
// math path: the scores, their softmax and the product written with other ops (and so
// differentiable in every argument, to any order). SdpBackendGuard restricts the paths for a
// scope; a call that no allowed path takes raises ValueError naming the reason. Both paths give
// a row that attends to nothing (every key masked) the output 0, where a plain softmax would give
// NaN, and a zero gradient.
#include <cmath>
#include <limits>
#include <vector>

#include <xten/autograd/grad_mode.h>
#include <xten/core/error.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/attention.h>

namespace xten {
namespace {

constexpr unsigned kFlashBit = 1u << static_cast<int>(SdpBackend::kFlash);
constexpr unsigned kMathBit = 1u << static_cast<int>(SdpBackend::kMath);
thread_local unsigned t_allowed = kFlashBit | kMathBit;

const char* kOp = "scaled_dot_product_attention";

bool has(const std::optional<Tensor>& t) {
  return t && t->defined();
}

// The checks every path makes (the kernels check the 4-d form again).
void check_operands(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                    const std::optional<Tensor>& mask, double dropout_p, bool is_causal,
                    bool enable_gqa) {
  XTEN_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, ValueError, op,
             "expected query, key and value of at least 2 dims [..., length, features], but got "
             "query {}, key {}, value {}",
             q.sizes(), k.sizes(), v.sizes());
  check_attention_dtypes(op, q, k, v);
  XTEN_CHECK(q.size(-1) == k.size(-1), ValueError, op,
             "the query's features ({}) and the key's ({}) differ: query {}, key {}", q.size(-1),
             k.size(-1), q.sizes(), k.sizes());
  XTEN_CHECK(k.size(-2) == v.size(-2), ValueError, op,
             "key and value have different lengths: key {}, value {}", k.sizes(), v.sizes());
  XTEN_CHECK(dropout_p >= 0 && dropout_p <= 1, ValueError, op,
             "dropout_p must be in [0, 1], but got {}", dropout_p);
  if (has(mask)) {
    XTEN_CHECK(!is_causal, ValueError, op,
               "an explicit attn_mask cannot be combined with is_causal=true");
    XTEN_CHECK(mask->dtype() == kBool || mask->dtype() == q.dtype(), TypeError, op,
               "expected attn_mask of dtype Bool or the query's dtype {}, but got {}",
               to_string(q.dtype()), to_string(mask->dtype()));
  }
  if (enable_gqa) {
    XTEN_CHECK(q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3 && k.size(-3) == v.size(-3) &&
                   k.size(-3) > 0 && q.size(-3) % k.size(-3) == 0,
               ValueError, op,
               "enable_gqa needs heads at dim -3, the query's a multiple of the key's and value's "
               "(equal), but got query {}, key {}, value {}",
               q.sizes(), k.sizes(), v.sizes());
  }
}

double default_scale(const Tensor& q, std::optional<double> scale) {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
}

// Key or value [..., Hk, S, E] repeated to [..., H, S, E], each head `group` times in a row.
Tensor repeat_heads(const Tensor& t, int64_t heads) {
  const int64_t hk = t.size(-3);
  if (hk == heads) return t;
  std::vector<int64_t> expanded(t.sizes().begin(), t.sizes().end());
  expanded.insert(expanded.end() - 2, heads / hk);
  std::vector<int64_t> merged(t.sizes().begin(), t.sizes().end());
  merged[merged.size() - 3] = heads;
  return t.unsqueeze(-3).expand(expanded).reshape(merged);
}

// The key/value gradient of repeat_heads: the group's gradients summed.
Tensor sum_heads(const Tensor& g, int64_t kv_heads) {
  const int64_t heads = g.size(-3);
  if (heads == kv_heads) return g;
  std::vector<int64_t> split(g.sizes().begin(), g.sizes().end());
  split[split.size() - 3] = kv_heads;
  split.insert(split.end() - 2, heads / kv_heads);
  return g.reshape(split).sum({static_cast<int64_t>(split.size()) - 3});
}

// The scores q @ k^T * scale with the mask or causal -inf applied ([..., L, S]), and whether
// some rows may attend to nothing (only an explicit mask can do that).
Tensor masked_scores(const Tensor& q, const Tensor& k, const std::optional<Tensor>& mask,
                     bool is_causal, double scale) {
  Tensor s = matmul(q, k.transpose(-2, -1)) * scale;
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    const Tensor keep = ones({q.size(-2), k.size(-2)}, kBool, q.device()).tril();
    s = s.masked_fill(keep.logical_not(), neg_inf);
  } else if (has(mask)) {
    s = mask->dtype() == kBool ? s.masked_fill(mask->logical_not(), neg_inf) : s + *mask;
  }
  return s;
}

// The rows of scores with no key left: all -inf ([..., L, 1]).
Tensor empty_rows(const Tensor& scores) {
  return (scores == -std::numeric_limits<double>::infinity()).all({-1}, true);
}

TensorPair math_kernel(const Tensor& query, const Tensor& key, const Tensor& value,
                       const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                       std::optional<double> scale, bool enable_gqa) {
  const char* op = "_scaled_dot_product_attention_math";
  check_operands(op, query, key, value, attn_mask, dropout_p, is_causal, enable_gqa);
  const Tensor k = enable_gqa ? repeat_heads(key, query.size(-3)) : key;
  const Tensor v = enable_gqa ? repeat_heads(value, query.size(-3)) : value;
  Tensor s = masked_scores(query, k, attn_mask, is_causal, default_scale(query, scale));
  Tensor w;
  if (has(attn_mask)) {
    // A row with every key masked: softmax over finite zeros, then zeroed, so that neither the
    // value nor the gradient is NaN.
    const Tensor none = empty_rows(s);
    w = softmax(s.masked_fill(none, 0.0), -1).masked_fill(none, 0.0);
  } else {
    w = softmax(s, -1);
  }
  if (dropout_p > 0) w = dropout(w, dropout_p, true);
  return {matmul(w, v), w};
}

// The flash kernels' gradients written with other ops, as the CPU kernel computes them
// (docs/attention.md, "Backward"), plus the term of a logsumexp gradient (second derivatives
// reach logsumexp through this formula's own use of it): dS = P (dP - D + g_lse).
TensorTriple flash_backward_closed_form(const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                        const Tensor& v, const Tensor& out, const Tensor& lse,
                                        const std::optional<Tensor>& attn_mask, bool is_causal,
                                        double scale, const Tensor& grad_lse) {
  const int64_t heads = q.size(1), kv_heads = k.size(1);
  const Tensor kr = repeat_heads(k, heads), vr = repeat_heads(v, heads);
  const Tensor s = masked_scores(q, kr, attn_mask, is_causal, scale);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  // exp(s - lse), with rows that attended nothing (lse = -inf) giving 0 rather than NaN.
  const Tensor lse_safe = lse.masked_fill(lse == neg_inf, 0.0).unsqueeze(-1).to(q.dtype());
  const Tensor p = (s - lse_safe).exp();
  const Tensor dv = matmul(p.transpose(-2, -1), grad_out);
  Tensor d = (grad_out * out).sum({-1}, true);
  if (grad_lse.defined()) d = d - grad_lse.unsqueeze(-1).to(q.dtype());
  const Tensor ds = p * (matmul(grad_out, vr.transpose(-2, -1)) - d);
  const Tensor dq = matmul(ds, kr) * scale;
  const Tensor dk = matmul(ds.transpose(-2, -1), q) * scale;
  return {dq, sum_heads(dk, kv_heads), sum_heads(dv, kv_heads)};
}

TensorTriple flash_backward_composite(const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                      const Tensor& v, const Tensor& out, const Tensor& lse,
                                      const std::optional<Tensor>& attn_mask, bool is_causal,
                                      double scale) {
  flash_attention_backward_meta("_scaled_dot_product_flash_attention_backward", grad_out, q, k, v,
                                out, lse, attn_mask, is_causal);
  return flash_backward_closed_form(grad_out, q, k, v, out, lse, attn_mask, is_causal, scale,
                                    Tensor());
}

// Why the flash kernel cannot take this call (empty if it can).
std::string flash_refusal(const Tensor& q, const std::optional<Tensor>& mask, double dropout_p) {
  if (dropout_p > 0) return "the flash kernel takes no dropout (dropout_p > 0)";
  if (has(mask) && mask->requires_grad() && GradMode::is_enabled())
    return "the flash kernel gives no gradient to attn_mask, which requires grad";
  if (q.device().type() != kCPU && q.device().type() != kXPU)
    return "the flash kernel runs on CPU and XPU only";
  return "";
}

Tensor sdpa_kernel(const Tensor& query, const Tensor& key, const Tensor& value,
                   const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                   std::optional<double> scale, bool enable_gqa) {
  check_operands(kOp, query, key, value, attn_mask, dropout_p, is_causal, enable_gqa);
  const std::string refusal = flash_refusal(query, attn_mask, dropout_p);
  if (!refusal.empty() || !(t_allowed & kFlashBit)) {
    XTEN_CHECK(t_allowed & kMathBit, ValueError, kOp,
               "no allowed path takes this call: the math path is not allowed and {}",
               refusal.empty() ? "neither is the flash kernel" : refusal);
    return std::get<0>(
        math_kernel(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa));
  }
  // The flash form [B, H, L, E]: dims before -3 broadcast and merged, dim -3 the heads.
  auto lead = [](const Tensor& t) {
    return t.dim() > 3 ? IntArrayRef(t.sizes().data(), t.dim() - 3) : IntArrayRef();
  };
  auto heads_of = [](const Tensor& t) { return t.dim() >= 3 ? t.size(-3) : int64_t{1}; };
  DimVector batch =
      broadcast_shapes(kOp, broadcast_shapes(kOp, lead(query), lead(key)), lead(value));
  int64_t h = heads_of(query), hk = heads_of(key);
  if (!enable_gqa) {  // heads broadcast like any other dim
    XTEN_CHECK(h == hk || h == 1 || hk == 1, ValueError, kOp,
               "query {} and key {} have different heads (dim -3); pass enable_gqa=true for "
               "grouped-query attention",
               query.sizes(), key.sizes());
    XTEN_CHECK(heads_of(value) == hk || heads_of(value) == 1 || hk == 1, ValueError, kOp,
               "key {} and value {} have different heads (dim -3)", key.sizes(), value.sizes());
    h = hk = std::max({h, hk, heads_of(value)});
  }
  int64_t b = 1;
  for (int64_t s : batch) b *= s;
  auto to4 = [&](const Tensor& t, int64_t heads) {
    std::vector<int64_t> full(batch.begin(), batch.end());
    full.push_back(heads);
    full.push_back(t.size(-2));
    full.push_back(t.size(-1));
    Tensor e = t.expand(full);
    return e.reshape({b, heads, t.size(-2), t.size(-1)});
  };
  const Tensor q4 = to4(query, h), k4 = to4(key, hk), v4 = to4(value, hk);
  std::optional<Tensor> m4;
  if (has(attn_mask)) {
    std::vector<int64_t> full(batch.begin(), batch.end());
    full.push_back(h);
    full.push_back(query.size(-2));
    full.push_back(key.size(-2));
    const Tensor m = attn_mask->expand(full);
    m4 = full.size() == 4 ? m : m.reshape({b, h, query.size(-2), key.size(-2)});
  }
  const Tensor out = std::get<0>(
      _scaled_dot_product_flash_attention(q4, k4, v4, m4, is_causal, default_scale(query, scale)));
  std::vector<int64_t> shape(batch.begin(), batch.end());
  if (std::max({query.dim(), key.dim(), value.dim()}) >= 3) shape.push_back(h);
  shape.push_back(query.size(-2));
  shape.push_back(value.size(-1));
  return out.reshape(shape);
}

}  // namespace

SdpBackendGuard::SdpBackendGuard(std::initializer_list<SdpBackend> allowed) : prev_(t_allowed) {
  t_allowed = 0;
  for (SdpBackend b : allowed) t_allowed |= 1u << static_cast<int>(b);
}
SdpBackendGuard::~SdpBackendGuard() {
  t_allowed = prev_;
}

namespace detail {
TensorTriple flash_attention_backward_with_lse(const Tensor& grad_out, const Tensor& q,
                                               const Tensor& k, const Tensor& v, const Tensor& out,
                                               const Tensor& lse,
                                               const std::optional<Tensor>& attn_mask,
                                               bool is_causal, double scale,
                                               const Tensor& grad_lse) {
  return flash_backward_closed_form(grad_out, q, k, v, out, lse, attn_mask, is_causal, scale,
                                    grad_lse);
}
}  // namespace detail

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("scaled_dot_product_attention", sdpa_kernel);
  m.impl("_scaled_dot_product_attention_math", math_kernel);
  m.impl("_scaled_dot_product_flash_attention_backward", flash_backward_composite);
}

}  // namespace xten
