#include <xten/autograd/grad_mode.h>

namespace xten {

namespace {
thread_local bool tls_inference_mode = false;
}

bool GradMode::is_enabled() {
  return !local_dispatch_key_set().excluded.has(DispatchKey::AutogradCPU);
}

void GradMode::set_enabled(bool enabled) {
  LocalDispatchKeySet s = local_dispatch_key_set();
  s.excluded = enabled ? s.excluded - kAutogradKeys : s.excluded | kAutogradKeys;
  set_local_dispatch_key_set(s);
}

AutoGradMode::AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
  GradMode::set_enabled(enabled);
}
AutoGradMode::~AutoGradMode() {
  GradMode::set_enabled(prev_);
}

InferenceMode::InferenceMode(bool enabled)
    : prev_grad_(GradMode::is_enabled()), prev_inference_(tls_inference_mode) {
  tls_inference_mode = enabled;
  GradMode::set_enabled(!enabled && prev_grad_);
  if (!enabled && prev_inference_) GradMode::set_enabled(true);
}
InferenceMode::~InferenceMode() {
  tls_inference_mode = prev_inference_;
  GradMode::set_enabled(prev_grad_);
}
bool InferenceMode::is_enabled() {
  return tls_inference_mode;
}

}  // namespace xten
