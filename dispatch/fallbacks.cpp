// Backend fallbacks that hold for every op.
#include <xten/dispatch/library.h>

namespace xten {

// Autograd is reserved (design.md section 3): until it lands, its keys pass every call on
// to the backend below.
LIBRARY_IMPL(_, AutogradCPU, m) {
  m.fallback(KernelFunction::fallthrough());
}
LIBRARY_IMPL(_, AutogradXPU, m) {
  m.fallback(KernelFunction::fallthrough());
}

// Autocast: an op that no cast policy lists runs in its input dtypes (autocast/ registers
// kernels for the listed ops on these keys).
LIBRARY_IMPL(_, AutocastCPU, m) {
  m.fallback(KernelFunction::fallthrough());
}
LIBRARY_IMPL(_, AutocastXPU, m) {
  m.fallback(KernelFunction::fallthrough());
}

}  // namespace xten
