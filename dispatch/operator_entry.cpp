#include <xten/dispatch/operator_entry.h>

#include <fmt/format.h>

#include <xten/dispatch/dispatcher.h>

namespace xten {

OperatorEntry::OperatorEntry(std::string full_name) : full_name_(std::move(full_name)) {
  const std::string name = display_name();
  error_name_ = name.substr(0, name.find('.'));
}

std::string OperatorEntry::display_name() const {
  const auto pos = full_name_.find("::");
  return pos == std::string::npos ? full_name_ : full_name_.substr(pos + 2);
}

// Note [Table entry resolution]
// Which kernel runs for a runtime key, in order:
//   1. a kernel registered for the op on that key; for an autograd key (AutogradCPU,
//      AutogradXPU), one registered on the Autograd alias;
//   2. for a backend key (CPU, XPU) or an autograd key: the op's CompositeImplicit kernel, which
//      is written with other ops and so is valid on every backend; at an autograd key it runs
//      above autograd, so its inner ops are recorded and it is differentiable through its
//      decomposition (docs/autograd.md);
//   3. the backend fallback registered for the key, for every op (boxed, or fallthrough);
//   4. missing: calling it raises the missing-kernel error.
// The autograd keys' fallback records nothing for non-differentiable ops and a node that raises
// for the rest (autograd/autograd_kernel.cpp); the autocast keys have a fallthrough for every op
// that no cast policy lists (autocast/).
std::pair<const KernelFunction*, OperatorEntry::Source> OperatorEntry::resolve(
    const Dispatcher& d, DispatchKey key) const {
  const Registration& direct = kernels_[static_cast<int>(key)];
  if (direct.present) return {&direct.kernel, Source::Direct};  // 1
  const Registration& autograd = kernels_[static_cast<int>(DispatchKey::Autograd)];
  if (is_autograd_key(key) && autograd.present) return {&autograd.kernel, Source::Alias};  // 1
  const Registration& composite = kernels_[static_cast<int>(DispatchKey::CompositeImplicit)];
  if ((is_backend_key(key) || is_autograd_key(key)) && composite.present)
    return {&composite.kernel, Source::Composite};  // 2
  const KernelFunction& fallback = d.backend_fallback(key);
  if (!fallback.is_missing()) return {&fallback, Source::BackendFallback};  // 3
  return {nullptr, Source::Missing};                                        // 4
}

void OperatorEntry::recompute_table(const Dispatcher& d) {
  non_fallthrough_ = DispatchKeySet::from_bits(~uint64_t{0});
  for (int k = 0; k < kNumRuntimeKeys; ++k) {
    auto [kernel, source] = resolve(d, static_cast<DispatchKey>(k));
    table_[k] = kernel ? *kernel : KernelFunction();
    sources_[k] = source;
    if (kernel && kernel->is_fallthrough())
      non_fallthrough_ = non_fallthrough_.remove(static_cast<DispatchKey>(k));
  }
}

std::string OperatorEntry::registered_keys() const {
  std::string s;
  for (int k = 1; k < static_cast<int>(DispatchKey::EndOfKeys); ++k) {
    if (!kernels_[k].present) continue;
    if (!s.empty()) s += ", ";
    s += to_string(static_cast<DispatchKey>(k));
  }
  return s.empty() ? "none" : s;
}

std::string OperatorEntry::dump_table() const {
  std::string s = fmt::format("{}\n", schema_ ? schema_->text() : full_name_);
  for (int k = 1; k < kNumRuntimeKeys; ++k) {
    const char* what = "missing";
    std::string site;
    switch (sources_[k]) {
      case Source::Missing:
        break;
      case Source::Direct:
        what = table_[k].is_fallthrough() ? "fallthrough" : "kernel";
        site = kernels_[k].site;
        break;
      case Source::Alias:
        what = "Autograd kernel";
        site = kernels_[static_cast<int>(DispatchKey::Autograd)].site;
        break;
      case Source::Composite:
        what = "CompositeImplicit kernel";
        site = kernels_[static_cast<int>(DispatchKey::CompositeImplicit)].site;
        break;
      case Source::BackendFallback:
        what = table_[k].is_fallthrough() ? "fallthrough (backend fallback)" : "backend fallback";
        break;
    }
    s += fmt::format("  {:<12} {}{}{}\n", to_string(static_cast<DispatchKey>(k)), what,
                     site.empty() ? "" : " from ", site);
  }
  return s;
}

}  // namespace xten
