#pragma once
// The Dispatcher: the registry of ops, and the call path.
//
//   static const auto op = Dispatcher::singleton().find("xten::add.Tensor")
//                              .typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
//   return op.call(self, other, alpha);
//
// Note [Dispatch call path]
// A call computes its key set from its arguments (tensors' keys, a Device argument's keys),
// adds the thread-local included set, removes the excluded set and the op's fallthrough
// keys, and runs the table entry of the highest key: an unboxed kernel by a direct call
// through a function pointer; a boxed one by boxing the arguments into a Stack. The handle
// is found once (a function-local static), so no call does a string lookup or allocates.
//
// Note [Registration and threads]
// Registration takes the dispatcher's lock and rewrites the affected tables; calls read the
// tables without a lock. Registrations happen at library load (static initializers) and in
// tests; registering while another thread calls the same op is not supported.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <xten/dispatch/local_dispatch_key_set.h>
#include <xten/dispatch/operator_entry.h>
#include <xten/profiler/record.h>

namespace xten {

namespace detail {
// The dispatch keys an argument contributes.
inline DispatchKeySet arg_keys(const Tensor& t) {
  return t.defined() && !t.impl()->is_wrapped_number() ? t.key_set() : DispatchKeySet();
}
inline DispatchKeySet arg_keys(const std::optional<Tensor>& t) {
  return t ? arg_keys(*t) : DispatchKeySet();
}
inline DispatchKeySet arg_keys(const std::vector<Tensor>& ts) {
  DispatchKeySet ks;
  for (const auto& t : ts) ks = ks | arg_keys(t);
  return ks;
}
inline DispatchKeySet arg_keys(Device d) {
  return key_set_for_device_type(static_cast<int>(d.type()));
}
template <class T>
DispatchKeySet arg_keys(const T&) {
  return DispatchKeySet();
}
DispatchKeySet stack_keys(const Stack& stack, size_t num_args);

// Note [Version counter]: a call of an op that writes an argument bumps that tensor's version
// before it runs, whatever the key that runs it (docs/autograd.md).
inline void bump_version(const Tensor& t) {
  if (t.defined()) t.impl()->bump_version();
}
inline void bump_version(const std::vector<Tensor>& ts) {  // Tensor(a!)[]
  for (const Tensor& t : ts) bump_version(t);
}
template <class T>
void bump_version(const T&) {}
void bump_version(const IValue& v);
template <class... Args>
void bump_written_args(uint64_t mask, const Args&... args) {
  int i = 0;
  ((((mask >> i) & 1) ? bump_version(args) : void(), ++i), ...);
}
// Note [Host reads]: item() reads a tensor's value into the host program, and manual_seed()
// changes generator state outside any op. While a graph is captured (compile/capture.cpp) both
// are graph breaks: what the program does next depends on (or changes) something the graph
// cannot replay. The capture installs the hook; item() and manual_seed() call on_graph_break.
// The other way, a tensor the host fills (tensor(values)) is made with Capture excluded, so the
// capture sees the filled tensor as data the program read, not an `empty` to replay.
using GraphBreakHook = void (*)(const char* what);
extern GraphBreakHook g_graph_break_hook;
inline void on_graph_break(const char* what) {
  if (__builtin_expect(g_graph_break_hook != nullptr, 0)) {
    // (a kernel reading a value while its own node runs is part of that node: Capture is
    // excluded then)
    const LocalDispatchKeySet local = local_dispatch_key_set();
    if (local.included.has(DispatchKey::Capture) && !local.excluded.has(DispatchKey::Capture))
      g_graph_break_hook(what);
  }
}
}  // namespace detail

template <class Sig>
class TypedOperatorHandle;

class OperatorHandle {
 public:
  OperatorHandle() = default;
  explicit OperatorHandle(OperatorEntry* e) : entry_(e) {}
  const OperatorEntry& entry() const { return *entry_; }
  const std::string& name() const { return entry_->full_name(); }
  const std::string& schema() const { return entry_->schema(); }

  // Checks (once) that Sig is the op's C++ signature, and returns a handle that calls with it.
  template <class Sig>
  TypedOperatorHandle<Sig> typed() const {
    check_signature(&cpp_signature_of<Sig>());
    return TypedOperatorHandle<Sig>(entry_);
  }

  // Calls with arguments on the stack; results replace them.
  void call_boxed(Stack* stack) const;
  // Calls the kernel of the highest key in `ks` (a boxed kernel redispatching downwards).
  void redispatch_boxed(DispatchKeySet ks, Stack* stack) const;

 protected:
  void check_signature(const CppSignature* sig) const;
  OperatorEntry* entry_ = nullptr;
};

// Keys of all arguments, plus the thread-local included, minus the excluded.
inline DispatchKeySet apply_local_key_set(DispatchKeySet args) {
  const LocalDispatchKeySet local = local_dispatch_key_set();
  return (args | local.included) - local.excluded;
}

namespace detail {
// While the outermost composite kernel runs, errors inside it name its op (detail::called_op()
// in core/error.h).
class CalledOpScope {
 public:
  CalledOpScope(bool composite, const char* name) {
    if (__builtin_expect(composite, 0)) {
      const char*& slot = called_op();
      if (!slot) {
        slot = name;
        slot_ = &slot;
      }
    }
  }
  ~CalledOpScope() {
    if (slot_) *slot_ = nullptr;
  }
  CalledOpScope(const CalledOpScope&) = delete;
  CalledOpScope& operator=(const CalledOpScope&) = delete;

 private:
  const char** slot_ = nullptr;
};
}  // namespace detail

template <class Ret, class... Args>
class TypedOperatorHandle<Ret(Args...)> : public OperatorHandle {
 public:
  explicit TypedOperatorHandle(OperatorEntry* e) : OperatorHandle(e) {}

  Ret call(Args... args) const {
    const DispatchKeySet ks =
        apply_local_key_set((detail::arg_keys(args) | ... | DispatchKeySet()));
    if (__builtin_expect(entry_->written_args() != 0, 0))
      detail::bump_written_args(entry_->written_args(), args...);
    return redispatch(ks, std::forward<Args>(args)...);
  }
  // Runs the kernel of the highest key of `ks`, whatever the thread-local state.
  Ret redispatch(DispatchKeySet ks, Args... args) const {
    DispatchKey chosen;
    const KernelFunction& k = entry_->lookup(ks, &chosen);
    if (__builtin_expect(profiler::detail::recording(), 0)) {  // docs/profiler.md
      auto in = profiler::detail::input_shapes(args...);
      const profiler::detail::Range range(entry_, chosen, std::move(in.shapes),
                                          std::move(in.dtypes));
      return run(k, chosen, ks, std::forward<Args>(args)...);
    }
    return run(k, chosen, ks, std::forward<Args>(args)...);
  }

 private:
  Ret run(const KernelFunction& k, DispatchKey chosen, DispatchKeySet ks, Args... args) const {
    const detail::CalledOpScope called(entry_->runs_composite(chosen), entry_->error_name());
    if (__builtin_expect(k.unboxed() != nullptr, 1))
      return reinterpret_cast<Ret (*)(Args...)>(k.unboxed())(std::forward<Args>(args)...);
    Stack stack;
    stack.reserve(sizeof...(Args));
    (stack.push_back(ivalue_traits<std::decay_t<Args>>::to(args)), ...);
    k.call_boxed(*this, ks, &stack);
    return pop_result<Ret>(stack);
  }
};

class Dispatcher {
 public:
  static Dispatcher& singleton();

  // The op named "ns::name.overload" (".overload" may be absent); ValueError if undeclared.
  OperatorHandle find(const std::string& full_name);
  bool has_op(const std::string& full_name);
  std::vector<std::string> op_names();

  // Registration (through Library); each returns an id to deregister with.
  // `sig` (optional): the C++ signature every kernel and caller of the op must use.
  uint64_t define(const std::string& schema_with_ns, const std::string& site,
                  const CppSignature* sig = nullptr);
  uint64_t register_kernel(const std::string& full_name, DispatchKey key, KernelFunction k,
                           const std::string& site);
  uint64_t register_fallback(DispatchKey key, KernelFunction k, const std::string& site);
  void deregister(uint64_t id);

  // The kernel registered as a backend fallback for `key` (missing if none).
  const KernelFunction& backend_fallback(DispatchKey key) const {
    return fallbacks_[static_cast<int>(key)].kernel;
  }

  // Text dump of one op's table (see OperatorEntry::dump_table).
  std::string dump_table(const std::string& full_name);

 private:
  friend class OperatorHandle;
  OperatorEntry& entry_locked(const std::string& full_name);

  struct Fallback {
    KernelFunction kernel;
    std::string site;
    uint64_t id = 0;
  };
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<OperatorEntry>> ops_;
  std::array<Fallback, kNumRuntimeKeys> fallbacks_{};
  uint64_t next_id_ = 1;
};

}  // namespace xten
