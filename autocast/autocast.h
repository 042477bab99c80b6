#pragma once
// Automatic mixed precision (xten::autocast), in the mould of torch.autocast: inside a scope,
// ops that profit from lower precision run in float16/bfloat16, ops that need range run in
// float32, and the rest run in their inputs' dtypes. It is a dispatch layer: kernels on the
// AutocastCPU / AutocastXPU keys cast the arguments by the op's policy, exclude the autocast
// keys for the rest of the call and call the op again. docs/autocast.md lists every policy.
//
//   {
//     xten::autocast::AutocastGuard amp(xten::kCPU);  // bfloat16 by default on CPU
//     y = xten::linear(x, w, b);                        // bfloat16
//     loss = xten::cross_entropy(y, target);            // float32
//   }
#include <optional>
#include <string>
#include <vector>

#include <xten/core/device.h>
#include <xten/core/scalar_type.h>

namespace xten::autocast {

enum class CastPolicy {
  // Cast floating inputs on the scope's device to the autocast dtype (matmuls, convolutions).
  kLowerPrecisionFp,
  // Cast floating inputs on the scope's device to float32 (ops that need range or precision:
  // exp, log, norms, losses).
  kFp32,
  // Run in float32 unless the caller passed a dtype: the op's `dtype` argument is set to
  // float32 when the caller left it out (softmax, sum, cumsum, prod).
  kFp32SetOptDtype,
  // Cast floating inputs on the scope's device to the widest floating dtype among them and
  // the autocast dtype (ops whose inputs must agree: cat, stack, atan2, scatter_add).
  kPromote,
  // Refuse: unsafe in lower precision (binary_cross_entropy); the error names the safe op.
  kBanned,
};
const char* to_string(CastPolicy p);

// Thread-local state, per device type (CPU and XPU).
bool is_autocast_enabled(DeviceType device_type);
void set_autocast_enabled(DeviceType device_type, bool enabled);
// Defaults: bfloat16 on CPU, float16 on XPU. Only float16 and bfloat16 are accepted.
ScalarType get_autocast_dtype(DeviceType device_type);
void set_autocast_dtype(DeviceType device_type, ScalarType dtype);

// Enables (or disables) autocast for a device type for its lifetime, optionally with a dtype;
// the previous state comes back at the end. Nested guards nest. When the outermost guard ends,
// the cast cache is cleared.
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType device_type, std::optional<ScalarType> dtype = std::nullopt,
                         bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_type_;
  bool previous_enabled_;
  ScalarType previous_dtype_;
};

// Note [Cast cache]: inside an outermost scope, the lower-precision cast of a float32 tensor
// that requires grad (a parameter) is made once and reused; it is dropped when that scope
// ends. Thread-local, like the rest of the state.
void clear_cache();
size_t cache_size();

// The policy of `op` ("mm", "sum.dim_IntList") on a device type, or nullopt (input dtypes).
std::optional<CastPolicy> policy_of(DeviceType device_type, const std::string& op);
// Every (op, policy) of a device type's lists, in list order.
std::vector<std::pair<std::string, CastPolicy>> policies(DeviceType device_type);

}  // namespace xten::autocast
