// Backend fallbacks that hold for every op (autocast's are in autocast/autocast.cpp).
#include <xten/dispatch/library.h>

namespace xten {

// Autograd is reserved (docs/architecture.md, "Dispatch keys"): until it lands, its keys pass every
// call on to the backend below.
LIBRARY_IMPL(_, AutogradCPU, m) {
  m.fallback(KernelFunction::fallthrough());
}
LIBRARY_IMPL(_, AutogradXPU, m) {
  m.fallback(KernelFunction::fallthrough());
}

}  // namespace xten
