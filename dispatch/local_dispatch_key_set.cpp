#include <xten/dispatch/local_dispatch_key_set.h>

namespace xten {

namespace detail {
thread_local RawLocalKeySet tls_key_set;
}

void set_local_dispatch_key_set(LocalDispatchKeySet s) {
  detail::tls_key_set.included = s.included.raw();
  detail::tls_key_set.excluded_xor_default = s.excluded.raw() ^ kDefaultExcludedKeys.raw();
}

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet keys)
    : saved_(local_dispatch_key_set()) {
  set_local_dispatch_key_set({saved_.included | keys, saved_.excluded});
}
IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() {
  set_local_dispatch_key_set(saved_);
}

ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet keys)
    : saved_(local_dispatch_key_set()) {
  set_local_dispatch_key_set({saved_.included, saved_.excluded | keys});
}
ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() {
  set_local_dispatch_key_set(saved_);
}

UnexcludeDispatchKeyGuard::UnexcludeDispatchKeyGuard(DispatchKeySet keys)
    : saved_(local_dispatch_key_set()) {
  set_local_dispatch_key_set({saved_.included, saved_.excluded - keys});
}
UnexcludeDispatchKeyGuard::~UnexcludeDispatchKeyGuard() {
  set_local_dispatch_key_set(saved_);
}

}  // namespace xten
