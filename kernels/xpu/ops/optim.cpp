// The multi-tensor ops of the optimizers and GradScaler on the XPU (optim.cl; docs/optim.md,
// "One kernel for many tensors"): the tensors are grouped by dtype, each group's chunks listed
// in a table copied to the device, and one kernel launched per dtype over all of them. The
// checks are the CPU kernels' (kernels/common/op_checks.h).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>

#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

// Elements per chunk: a work-group of 256 items strides over it 16 times.
constexpr int64_t kChunk = int64_t{kGroupSize} * 16;

int64_t address(const Tensor& t) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data_ptr()));
}

// Per dtype of `self`'s tensors, the chunk table on `device`: row(k, begin, count, out)
// appends the row of tensor k's chunk [begin, begin + count).
template <class Row>
std::map<ScalarType, Tensor> chunk_tables(const std::vector<Tensor>& self, Device device,
                                          Row&& row) {
  std::map<ScalarType, std::vector<int64_t>> rows;
  for (size_t k = 0; k < self.size(); ++k)
    for (int64_t b = 0; b < self[k].numel(); b += kChunk)
      row(k, b, std::min(kChunk, self[k].numel() - b), rows[self[k].dtype()]);
  std::map<ScalarType, Tensor> out;
  for (auto& [dtype, r] : rows) {
    if (r.empty()) continue;
    const Tensor host = from_blob(r.data(), {static_cast<int64_t>(r.size())}, kLong);
    out[dtype] = host.to(device);  // a blocking copy: `r` may go once it returns
  }
  return out;
}

// The kernel of a chunk table: its tensors' memory is reached through the table's addresses,
// which the driver must be told (zeKernelSetIndirectAccess; once per kernel).
Kernel& table_kernel(int device, const char* op, ScalarType dtype, const std::string& name) {
  Kernel& k = get_kernel(device, op, family_for("optim", {dtype}), name + "_" + dtype_tag(dtype));
  std::call_once(k.indirect_once, [&k] {
    XTEN_ZE_CHECK(zeKernelSetIndirectAccess(k.handle, ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE));
  });
  return k;
}

// A scalar as its kernel parameter of type T##_m (double for float64, else float).
struct OpmathScalar {
  ScalarType t;
  template <class F>
  decltype(auto) operator()(F&& f) const {
    return t == kDouble ? f(double{}) : f(float{});
  }
};

// A per-chunk scalar in a table long (TABLE_SCALAR in optim.cl).
int64_t table_scalar(double v, ScalarType t) {
  if (t == kDouble) {
    int64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  }
  const float f = static_cast<float>(v);
  int32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

void amp_unscale_kernel(const std::vector<Tensor>& self, const Tensor& found_inf,
                        const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  const Device device = check_amp_unscale(self, found_inf, inv_scale);
  auto row = [&](size_t k, int64_t begin, int64_t count, std::vector<int64_t>& out) {
    out.insert(out.end(), {address(self[k]), begin, count});
  };
  for (const auto& [dtype, table] : chunk_tables(self, device, row)) {
    Kernel& k = table_kernel(device_of(found_inf), op, dtype, "amp_unscale");
    launch_groups(stream_of(found_inf), k, static_cast<uint64_t>(table.numel() / 3),
                  table.data_ptr(), found_inf.data_ptr(), inv_scale.data_ptr());
  }
}

// GradScaler's flag as the fused kernels take it (`skip`, `skip_given`): its address, or the
// table's, unread, when it was not given.
const void* flag_or(const std::optional<Tensor>& found_inf, const Tensor& table) {
  return found_inf ? found_inf->data_ptr() : table.data_ptr();
}

void amp_update_scale_kernel(const Tensor& self, const Tensor& growth_tracker,
                             const Tensor& found_inf, double growth_factor, double backoff_factor,
                             int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  check_amp_update_scale(self, growth_tracker, found_inf, growth_factor, backoff_factor,
                         growth_interval);
  Kernel& k = get_kernel(device_of(self), op, "optim", "amp_update_scale");
  launch_groups(stream_of(self), k, 1, self.data_ptr(), growth_tracker.data_ptr(),
                found_inf.data_ptr(), static_cast<float>(growth_factor),
                static_cast<float>(backoff_factor),
                static_cast<int32_t>(std::min<int64_t>(growth_interval, INT32_MAX)));
}

void fused_sgd_kernel(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                      const std::vector<Tensor>& bufs, double weight_decay, double momentum,
                      double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
                      const std::optional<Tensor>& found_inf) {
  const char* op = "_fused_sgd_";
  const Device device = check_fused_sgd(self, grads, bufs, momentum);
  const int32_t given = check_found_inf(op, found_inf, device);
  auto row = [&](size_t k, int64_t begin, int64_t count, std::vector<int64_t>& out) {
    out.insert(out.end(), {address(self[k]), address(grads[k]),
                           momentum != 0 ? address(bufs[k]) : 0, begin, count});
  };
  for (const auto& [dtype, table] : chunk_tables(self, device, row)) {
    Kernel& k = table_kernel(device_of(self[0]), op, dtype, "fused_sgd");
    const int32_t use_momentum = momentum != 0, nest = nesterov, max = maximize,
                  first = is_first_step;
    OpmathScalar{dtype}([&](auto m) {
      using M = decltype(m);
      launch_groups(stream_of(self[0]), k, static_cast<uint64_t>(table.numel() / 5),
                    table.data_ptr(), static_cast<M>(weight_decay), static_cast<M>(momentum),
                    static_cast<M>(1 - dampening), static_cast<M>(lr), use_momentum, nest, max,
                    first, flag_or(found_inf, table), given);
    });
  }
}

void fused_adam_kernel(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                       const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                       const std::vector<Tensor>& max_exp_avg_sqs, const Tensor& state_steps,
                       double lr, double beta1, double beta2, double weight_decay, double eps,
                       bool amsgrad, bool maximize, bool decoupled,
                       const std::optional<Tensor>& found_inf) {
  const char* op = "_fused_adam_";
  const Device device = check_fused_adam(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                                         state_steps, amsgrad, found_inf);
  const int32_t given = found_inf.has_value();  // checked with the others
  const Tensor steps = state_steps.contiguous();
  const double* step = static_cast<const double*>(steps.data_ptr());
  auto row = [&](size_t k, int64_t begin, int64_t count, std::vector<int64_t>& out) {
    const double bias1 = 1 - std::pow(beta1, step[k]), bias2 = 1 - std::pow(beta2, step[k]);
    const ScalarType t = self[k].dtype();
    out.insert(out.end(), {address(self[k]), address(grads[k]), address(exp_avgs[k]),
                           address(exp_avg_sqs[k]), amsgrad ? address(max_exp_avg_sqs[k]) : 0,
                           begin, count, table_scalar(lr / bias1, t),
                           table_scalar(std::sqrt(bias2), t)});
  };
  for (const auto& [dtype, table] : chunk_tables(self, device, row)) {
    Kernel& k = table_kernel(device_of(self[0]), op, dtype, "fused_adam");
    const int32_t ams = amsgrad, max = maximize, dec = decoupled;
    OpmathScalar{dtype}([&](auto m) {
      using M = decltype(m);
      launch_groups(stream_of(self[0]), k, static_cast<uint64_t>(table.numel() / 9),
                    table.data_ptr(), static_cast<M>(beta1), static_cast<M>(beta2),
                    static_cast<M>(1 - beta1), static_cast<M>(1 - beta2),
                    static_cast<M>(weight_decay), static_cast<M>(1 - lr * weight_decay),
                    static_cast<M>(eps), ams, max, dec, flag_or(found_inf, table), given);
    });
  }
}

void fused_rmsprop_kernel(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                          const std::vector<Tensor>& square_avgs,
                          const std::vector<Tensor>& grad_avgs, const std::vector<Tensor>& bufs,
                          double lr, double alpha, double eps, double weight_decay, double momentum,
                          bool centered, bool maximize, const std::optional<Tensor>& found_inf) {
  const char* op = "_fused_rmsprop_";
  const Device device =
      check_fused_rmsprop(self, grads, square_avgs, grad_avgs, bufs, centered, momentum);
  const int32_t given = check_found_inf(op, found_inf, device);
  auto row = [&](size_t k, int64_t begin, int64_t count, std::vector<int64_t>& out) {
    out.insert(out.end(), {address(self[k]), address(grads[k]), address(square_avgs[k]),
                           centered ? address(grad_avgs[k]) : 0,
                           momentum > 0 ? address(bufs[k]) : 0, begin, count});
  };
  for (const auto& [dtype, table] : chunk_tables(self, device, row)) {
    Kernel& k = table_kernel(device_of(self[0]), op, dtype, "fused_rmsprop");
    const int32_t cen = centered, use_momentum = momentum > 0, max = maximize;
    OpmathScalar{dtype}([&](auto m) {
      using M = decltype(m);
      launch_groups(stream_of(self[0]), k, static_cast<uint64_t>(table.numel() / 7),
                    table.data_ptr(), static_cast<M>(lr), static_cast<M>(alpha),
                    static_cast<M>(1 - alpha), static_cast<M>(eps), static_cast<M>(weight_decay),
                    static_cast<M>(momentum), cen, use_momentum, max, flag_or(found_inf, table),
                    given);
    });
  }
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("_fused_rmsprop_", fused_rmsprop_kernel);
  m.impl("_amp_foreach_non_finite_check_and_unscale_", amp_unscale_kernel);
  m.impl("_fused_sgd_", fused_sgd_kernel);
  m.impl("_fused_adam_", fused_adam_kernel);
  m.impl("_amp_update_scale_", amp_update_scale_kernel);
}

}  // namespace xten::xpu
