#include <xten/dispatch/dispatcher.h>

#include <algorithm>

#include <fmt/format.h>

namespace xten {

namespace {
// Note [Schema and C++ signature]: a kernel's signature must fit the op's schema.
void check_fits_schema(const FunctionSchema& schema, const CppSignature& sig,
                       const std::string& what) {
  const std::string why = sig.mismatch(schema);
  XTEN_CHECK(why.empty(), TypeError, "dispatch", "{} does not fit the schema '{}': {}", what,
             schema.text(), why);
}
}  // namespace

namespace detail {
void bump_version(const IValue& v) {
  if (v.is_tensor()) bump_version(v.get<Tensor>());
  if (v.is_tensor_list()) bump_version(v.get<std::vector<Tensor>>());
}
GraphBreakHook g_graph_break_hook = nullptr;

DispatchKeySet stack_keys(const Stack& stack, size_t num_args) {
  DispatchKeySet ks;
  for (size_t i = stack.size() - std::min(num_args, stack.size()); i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.is_tensor())
      ks = ks | arg_keys(v.get<Tensor>());
    else if (v.is_tensor_list())
      ks = ks | arg_keys(v.get<std::vector<Tensor>>());
    else if (v.is<Device>())
      ks = ks | arg_keys(v.get<Device>());
  }
  return ks;
}
}  // namespace detail

std::string IValue::type_name() const {
  static const char* names[] = {"None",  "Tensor", "Scalar",     "int",    "float",   "bool",
                                "int[]", "str",    "ScalarType", "Device", "Tensor[]"};
  return names[v_.index()];
}

void KernelFunction::call_boxed(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) const {
  if (boxed_from_unboxed_) return boxed_from_unboxed_(unboxed_, stack);
  if (boxed_) return boxed_(op, ks, stack);
  DispatchKey key;
  op.entry().lookup(ks, &key);
  XTEN_FAIL(NotImplementedError, "xten", "no kernel for '{}' on {}; registered: {}",
            op.entry().display_name(), to_string(key), op.entry().registered_keys());
}

void OperatorHandle::call_boxed(Stack* stack) const {
  const int n = entry_->num_arguments();
  if (entry_->written_args() && n >= 0) {
    const size_t base = stack->size() - static_cast<size_t>(n);
    for (int i = 0; i < n; ++i)
      if ((entry_->written_args() >> i) & 1) detail::bump_version((*stack)[base + i]);
  }
  const DispatchKeySet ks = apply_local_key_set(
      detail::stack_keys(*stack, n < 0 ? stack->size() : static_cast<size_t>(n)));
  redispatch_boxed(ks, stack);
}

void OperatorHandle::redispatch_boxed(DispatchKeySet ks, Stack* stack) const {
  DispatchKey chosen;
  const KernelFunction& k = entry_->lookup(ks, &chosen);
  const detail::CalledOpScope called(entry_->runs_composite(chosen), entry_->error_name());
  // A recorded range while a profiler records, nothing otherwise (docs/profiler.md).
  const profiler::detail::Range range(entry_, chosen, {}, {});
  k.call_boxed(*this, ks, stack);
}

void OperatorHandle::check_signature(const CppSignature* sig) const {
  std::lock_guard<std::mutex> lock(Dispatcher::singleton().mutex_);
  const int arity = static_cast<int>(sig->arguments.size());
  XTEN_CHECK(entry_->num_arguments() < 0 || entry_->num_arguments() == arity, TypeError, "dispatch",
             "'{}' is declared with {} arguments ({}), but called with a C++ signature of {}",
             entry_->display_name(), entry_->num_arguments(), entry_->schema(), arity);
  XTEN_CHECK(!entry_->signature_ || *entry_->signature_->id == *sig->id, TypeError, "dispatch",
             "'{}' is called with a C++ signature other than its kernel's (registered at {})",
             entry_->display_name(), entry_->signature_site_);
  if (entry_->has_schema())
    check_fits_schema(entry_->function_schema(), *sig,
                      fmt::format("a call of '{}'", entry_->display_name()));
  if (!entry_->signature_) {
    entry_->signature_ = sig;
    entry_->signature_site_ = "a call site";
  }
}

Dispatcher& Dispatcher::singleton() {
  static Dispatcher* d =
      new Dispatcher();  // never destroyed: static destructors may still call ops
  return *d;
}

OperatorEntry& Dispatcher::entry_locked(const std::string& full_name) {
  auto& slot = ops_[full_name];
  if (!slot) {
    slot = std::make_unique<OperatorEntry>(full_name);
    slot->recompute_table(*this);
  }
  return *slot;
}

OperatorHandle Dispatcher::find(const std::string& full_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ops_.find(full_name);
  XTEN_CHECK(it != ops_.end() && it->second->has_schema(), ValueError, "dispatch",
             "no operator named '{}' is declared", full_name);
  return OperatorHandle(it->second.get());
}

bool Dispatcher::has_op(const std::string& full_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ops_.find(full_name);
  return it != ops_.end() && it->second->has_schema();
}

std::vector<std::string> Dispatcher::op_names() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (auto& [name, e] : ops_)
    if (e->has_schema()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

uint64_t Dispatcher::define(const std::string& schema, const std::string& site,
                            const CppSignature* sig) {
  FunctionSchema parsed = FunctionSchema::parse(schema);
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry& e = entry_locked(parsed.full_name());
  XTEN_CHECK(!e.has_schema(), ValueError, "dispatch", "'{}' is declared twice: at {} and at {}",
             parsed.full_name(), e.schema_site_, site);
  // Kernels registered before the declaration (static initializers run in any order across
  // files) are checked now.
  for (int k = 0; k < static_cast<int>(DispatchKey::EndOfKeys); ++k) {
    const auto& reg = e.kernels_[k];
    if (reg.present && reg.kernel.signature())
      check_fits_schema(parsed, *reg.kernel.signature(),
                        fmt::format("the kernel for '{}' on {} at {}", e.display_name(),
                                    to_string(static_cast<DispatchKey>(k)), reg.site));
  }
  if (sig) {
    check_fits_schema(parsed, *sig, fmt::format("the C++ signature declared at {}", site));
    XTEN_CHECK(!e.signature_ || *e.signature_->id == *sig->id, TypeError, "dispatch",
               "'{}' is declared at {} with a C++ signature other than its kernel's at {}",
               e.display_name(), site, e.signature_site_);
    e.signature_ = sig;
    e.signature_site_ = site;
  }
  for (size_t i = 0; i < parsed.arguments().size() && i < 64; ++i)
    if (parsed.writes_argument(i)) e.written_args_ |= uint64_t{1} << i;
  e.schema_ = std::move(parsed);
  e.schema_site_ = site;
  return 0;  // declarations are not withdrawn
}

uint64_t Dispatcher::register_kernel(const std::string& full_name, DispatchKey key,
                                     KernelFunction k, const std::string& site) {
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry& e = entry_locked(full_name);
  auto& reg = e.kernels_[static_cast<int>(key)];
  XTEN_CHECK(!reg.present, ValueError, "dispatch",
             "a second kernel for '{}' on {}: first registered at {}, again at {}",
             e.display_name(), to_string(key), reg.site, site);
  if (k.signature()) {
    XTEN_CHECK(!e.signature_ || *e.signature_->id == *k.signature()->id, TypeError, "dispatch",
               "kernel for '{}' on {} at {} has a C++ signature other than the kernel at {}",
               e.display_name(), to_string(key), site, e.signature_site_);
    if (e.has_schema())
      check_fits_schema(
          e.function_schema(), *k.signature(),
          fmt::format("the kernel for '{}' on {} at {}", e.display_name(), to_string(key), site));
    if (!e.signature_) {
      e.signature_ = k.signature();
      e.signature_site_ = site;
    }
  }
  reg = {std::move(k), site, next_id_++, true};
  e.recompute_table(*this);
  return reg.id;
}

uint64_t Dispatcher::register_fallback(DispatchKey key, KernelFunction k, const std::string& site) {
  std::lock_guard<std::mutex> lock(mutex_);
  XTEN_CHECK(!is_alias_key(key), ValueError, "dispatch", "a fallback needs a runtime key, not {}",
             to_string(key));
  Fallback& f = fallbacks_[static_cast<int>(key)];
  XTEN_CHECK(f.kernel.is_missing(), ValueError, "dispatch",
             "a second fallback for {}: first registered at {}, again at {}", to_string(key),
             f.site, site);
  f = {std::move(k), site, next_id_++};
  for (auto& [name, e] : ops_) e->recompute_table(*this);
  return f.id;
}

void Dispatcher::deregister(uint64_t id) {
  if (id == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& f : fallbacks_) {
    if (f.id != id) continue;
    f = Fallback();
    for (auto& [name, e] : ops_) e->recompute_table(*this);
    return;
  }
  for (auto& [name, e] : ops_) {
    for (auto& reg : e->kernels_) {
      if (reg.id != id) continue;
      reg = OperatorEntry::Registration();
      e->recompute_table(*this);
      return;
    }
  }
}

std::string Dispatcher::dump_table(const std::string& full_name) {
  OperatorHandle op = find(full_name);
  std::lock_guard<std::mutex> lock(mutex_);
  return op.entry().dump_table();
}

}  // namespace xten
