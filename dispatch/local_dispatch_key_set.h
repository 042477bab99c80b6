#pragma once
// Thread-local included/excluded key sets and their RAII guards.
//
// Note [Default excluded keys]
// The autocast keys are excluded by default, so a tensor's Autocast key is inert until an
// autocast scope takes it out of the excluded set. The excluded set is stored XOR the
// default, so the zero-initialized thread_local is already the default state (no
// per-thread constructor on the hot path).
#include <xten/dispatch/dispatch_key.h>

namespace xten {

constexpr DispatchKeySet kDefaultExcludedKeys =
    DispatchKeySet(DispatchKey::AutocastCPU).add(DispatchKey::AutocastXPU);

struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
};

namespace detail {
struct RawLocalKeySet {
  uint64_t included = 0;
  uint64_t excluded_xor_default = 0;
};
extern thread_local RawLocalKeySet tls_key_set;
}  // namespace detail

inline LocalDispatchKeySet local_dispatch_key_set() {
  const auto& raw = detail::tls_key_set;
  return {DispatchKeySet::from_bits(raw.included),
          DispatchKeySet::from_bits(raw.excluded_xor_default ^ kDefaultExcludedKeys.raw())};
}
void set_local_dispatch_key_set(LocalDispatchKeySet s);

// Adds keys to the thread's included set for the guard's lifetime.
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet keys);
  explicit IncludeDispatchKeyGuard(DispatchKey key)
      : IncludeDispatchKeyGuard(DispatchKeySet(key)) {}
  ~IncludeDispatchKeyGuard();
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet saved_;
};

// Adds keys to the thread's excluded set for the guard's lifetime.
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet keys);
  explicit ExcludeDispatchKeyGuard(DispatchKey key)
      : ExcludeDispatchKeyGuard(DispatchKeySet(key)) {}
  ~ExcludeDispatchKeyGuard();
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet saved_;
};

// Removes keys from the thread's excluded set (what an autocast scope does).
class UnexcludeDispatchKeyGuard {
 public:
  explicit UnexcludeDispatchKeyGuard(DispatchKeySet keys);
  ~UnexcludeDispatchKeyGuard();
  UnexcludeDispatchKeyGuard(const UnexcludeDispatchKeyGuard&) = delete;
  UnexcludeDispatchKeyGuard& operator=(const UnexcludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet saved_;
};

}  // namespace xten
