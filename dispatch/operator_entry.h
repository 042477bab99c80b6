#pragma once
// OperatorEntry: one op's declaration, the kernels registered for it (one per key, with the
// place each was registered from) and the dispatch table computed from them.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <xten/dispatch/dispatch_key.h>
#include <xten/dispatch/function_schema.h>
#include <xten/dispatch/kernel_function.h>

namespace xten {

class Dispatcher;

class OperatorEntry {
 public:
  explicit OperatorEntry(std::string full_name);

  const std::string& full_name() const { return full_name_; }  // "xten::add.Tensor"
  std::string display_name() const;                            // "add.Tensor"
  // The schema as declared ("xten::add.Tensor(Tensor self, ...) -> Tensor"), parsed once.
  const std::string& schema() const { return schema_->text(); }
  const FunctionSchema& function_schema() const { return *schema_; }
  bool has_schema() const { return schema_.has_value(); }
  // The C++ signature of its kernels and callers (from the op table or the first kernel).
  const CppSignature* signature() const { return signature_; }
  // Bit i set: the op writes argument i (`Tensor(a!)`), so a call bumps its version counter.
  uint64_t written_args() const { return written_args_; }
  int num_arguments() const { return schema_ ? static_cast<int>(schema_->arguments().size()) : -1; }

  // The kernel to run for a call whose computed key set is `ks` (before fallthrough masking).
  const KernelFunction& lookup(DispatchKeySet ks, DispatchKey* chosen = nullptr) const {
    const DispatchKey k = (ks & non_fallthrough_).highest();
    if (chosen) *chosen = k;
    return table_[static_cast<int>(k)];
  }

  // Whether `k`'s entry is the op's CompositeImplicit kernel.
  bool runs_composite(DispatchKey k) const {
    return sources_[static_cast<int>(k)] == Source::Composite;
  }
  // The op's CompositeImplicit kernel, or null: graph capture runs it in place of a backend's
  // fused kernel where the passes fuse the primitives further (Note [Capture]).
  const KernelFunction* composite_kernel() const {
    const Registration& r = kernels_[static_cast<int>(DispatchKey::CompositeImplicit)];
    return r.present ? &r.kernel : nullptr;
  }
  // "embedding" for "xten::embedding", "conv2d" for "xten::conv2d.padding": the name errors
  // use (stable for the program's life, as the entry).
  const char* error_name() const { return error_name_.c_str(); }

  // The op's table as text: one line per runtime key, saying which kernel runs and why.
  std::string dump_table() const;
  // "CPU, CompositeImplicit": the keys that have a registered kernel.
  std::string registered_keys() const;

 private:
  friend class Dispatcher;
  friend class OperatorHandle;
  struct Registration {
    KernelFunction kernel;
    std::string site;  // "file.cpp:42"
    uint64_t id = 0;
    bool present = false;
  };
  enum class Source : uint8_t { Missing, Direct, Alias, Composite, BackendFallback };

  void recompute_table(const Dispatcher& d);
  std::pair<const KernelFunction*, Source> resolve(const Dispatcher& d, DispatchKey key) const;

  std::string full_name_;
  std::string error_name_;
  std::optional<FunctionSchema> schema_;
  std::string schema_site_;
  const CppSignature* signature_ = nullptr;  // the C++ signature kernels and callers share
  std::string signature_site_;
  std::array<Registration, static_cast<int>(DispatchKey::EndOfKeys)> kernels_{};
  std::array<KernelFunction, kNumRuntimeKeys> table_{};
  std::array<Source, kNumRuntimeKeys> sources_{};
  uint64_t written_args_ = 0;
  DispatchKeySet non_fallthrough_ = DispatchKeySet::from_bits(~uint64_t{0});
};

}  // namespace xten
