// The multi-tensor ops of the optimizers and GradScaler on the XPU (optim.cl; docs/optim.md,
// "One kernel for many tensors"): the tensors are grouped by dtype, each group's chunks listed
// in a table copied to the device, and one kernel launched per dtype over all of them. The
// checks are the CPU kernels' (kernels/common/op_checks.h).
#include <map>

#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

// Elements per chunk: a work-group of 256 items strides over it 16 times.
constexpr int64_t kChunk = int64_t{kGroupSize} * 16;

// Per dtype, the chunk table (address, first element, length per chunk) on `device`.
std::map<ScalarType, Tensor> chunk_tables(const std::vector<Tensor>& list, Device device) {
  std::map<ScalarType, std::vector<int64_t>> rows;
  for (const Tensor& t : list) {
    auto& r = rows[t.dtype()];
    const auto address = static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data_ptr()));
    for (int64_t b = 0; b < t.numel(); b += kChunk) {
      r.push_back(address);
      r.push_back(b);
      r.push_back(std::min(kChunk, t.numel() - b));
    }
  }
  std::map<ScalarType, Tensor> out;
  for (auto& [dtype, r] : rows) {
    if (r.empty()) continue;
    const Tensor host = from_blob(r.data(), {static_cast<int64_t>(r.size())}, kLong);
    out[dtype] = host.to(device);  // a blocking copy: `r` may go once it returns
  }
  return out;
}

void amp_unscale_kernel(const std::vector<Tensor>& self, const Tensor& found_inf,
                        const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  const Device device = check_amp_unscale(self, found_inf, inv_scale);
  for (const auto& [dtype, table] : chunk_tables(self, device)) {
    Kernel& k = get_kernel(device_of(found_inf), op, family_for("optim", {dtype}),
                           std::string("amp_unscale_") + dtype_tag(dtype));
    launch_groups(stream_of(found_inf), k, static_cast<uint64_t>(table.numel() / 3),
                  table.data_ptr(), found_inf.data_ptr(), inv_scale.data_ptr());
  }
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", amp_unscale_kernel);
}

}  // namespace xten::xpu
