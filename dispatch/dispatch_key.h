#pragma once
// Dispatch keys and key sets. A leaf header (no xten includes) because core's TensorImpl
// carries a key set; everything else about dispatch lives in dispatch/.
//
// Note [Dispatch key order]
// Keys are in priority order, lowest first; a call runs the kernel of the highest key in
// (tensors' keys | thread-local included) - thread-local excluded - the op's fallthroughs.
// Modes sit above backends so they run first and redispatch downwards. Autocast sits above
// autograd (as in PyTorch) so that autograd records the casts and saves post-cast inputs.
// Capture sits right above the backends, below autograd and autocast, so that what it records
// is what the backends run: the casts autocast inserted and the primitives composites decompose
// into (Note [Capture] in compile/capture.cpp).
#include <cstdint>
#include <string>

namespace xten {

enum class DispatchKey : uint8_t {
  Undefined = 0,  // no key: the empty set's highest key
  // Backends: the kernels that compute.
  CPU,  // host memory, Eigen kernels (kernels/cpu)
  XPU,  // Intel GPU through Level Zero (kernels/xpu)
  // Quantized tensors (dtype quint8/qint8/qint32, core/quantizer.h) carry these instead of their
  // device's keys: only the ops quantization/ registers take them, every other op raises
  // NotImplementedError naming itself (docs/quantization.md). Composites (views) run here too.
  QuantizedCPU,
  QuantizedXPU,
  // Graph capture: records each primitive into the graph being captured, then runs it below
  // (compile/, docs/compile.md). Never in a tensor's key set: included thread-locally while
  // xten::compile captures a program.
  Capture,
  // Autograd: records graph nodes, then redispatches below (autograd/). Only tensors in the
  // graph carry these keys.
  AutogradCPU,
  AutogradXPU,
  // Autocast: casts arguments by the op's policy, then redispatches below. Inert until an
  // autocast scope removes it from the thread-local excluded set.
  AutocastCPU,
  AutocastXPU,
  EndOfRuntimeKeys,
  // Alias keys: a registration there fills several runtime keys (see Note [Table entry
  // resolution] in dispatch/operator_entry.cpp). Never in a tensor's key set.
  CompositeImplicit = EndOfRuntimeKeys,  // one kernel written with other ops, for every backend
  Autograd,                              // one autograd kernel for AutogradCPU and AutogradXPU
  EndOfKeys,
};
constexpr int kNumRuntimeKeys = static_cast<int>(DispatchKey::EndOfRuntimeKeys);

const char* to_string(DispatchKey k);

constexpr bool is_backend_key(DispatchKey k) {
  return k == DispatchKey::CPU || k == DispatchKey::XPU || k == DispatchKey::QuantizedCPU ||
         k == DispatchKey::QuantizedXPU;
}
constexpr bool is_autograd_key(DispatchKey k) {
  return k == DispatchKey::AutogradCPU || k == DispatchKey::AutogradXPU;
}
constexpr bool is_alias_key(DispatchKey k) {
  return k >= DispatchKey::EndOfRuntimeKeys;
}

// A set of runtime keys, one bit each (bit i = key i); highest() is the priority winner.
class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k)
      : bits_(k == DispatchKey::Undefined ? 0 : uint64_t{1} << static_cast<int>(k)) {}
  static constexpr DispatchKeySet from_bits(uint64_t b) {
    DispatchKeySet s;
    s.bits_ = b;
    return s;
  }

  constexpr bool has(DispatchKey k) const { return (bits_ & DispatchKeySet(k).bits_) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint64_t raw() const { return bits_; }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return from_bits(bits_ & o.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return from_bits(bits_ & ~o.bits_); }
  constexpr DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return *this - DispatchKeySet(k); }
  constexpr bool operator==(DispatchKeySet o) const { return bits_ == o.bits_; }
  constexpr bool operator!=(DispatchKeySet o) const { return bits_ != o.bits_; }

  DispatchKey highest() const {
    return bits_ == 0 ? DispatchKey::Undefined
                      : static_cast<DispatchKey>(63 - __builtin_clzll(bits_));
  }
  std::string to_string() const;  // "{CPU, AutogradCPU}"

 private:
  uint64_t bits_ = 0;
};

// The keys of each device type, indexed by DeviceType (core/device.h): backend, autograd,
// autocast, quantized. A new backend adds its row (docs/adding_a_backend.md).
constexpr DispatchKey kDeviceTypeKeys[][4] = {
    {DispatchKey::CPU, DispatchKey::AutogradCPU, DispatchKey::AutocastCPU,
     DispatchKey::QuantizedCPU},  // DeviceType::CPU
    {DispatchKey::XPU, DispatchKey::AutogradXPU, DispatchKey::AutocastXPU,
     DispatchKey::QuantizedXPU},  // DeviceType::XPU
};
constexpr int kNumDeviceTypeKeyRows = sizeof(kDeviceTypeKeys) / sizeof(kDeviceTypeKeys[0]);

// The keys a tensor on a device of this type carries: backend and autocast. A tensor in the
// autograd graph carries its device's Autograd key too (Note [Autograd key], docs/autograd.md).
constexpr DispatchKeySet key_set_for_device_type(int device_type /* DeviceType */) {
  return DispatchKeySet(kDeviceTypeKeys[device_type][0]).add(kDeviceTypeKeys[device_type][2]);
}
constexpr DispatchKeySet kAutogradKeys =
    DispatchKeySet(DispatchKey::AutogradCPU).add(DispatchKey::AutogradXPU);

}  // namespace xten
