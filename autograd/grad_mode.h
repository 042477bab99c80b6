#pragma once
// Grad mode: whether ops record the graph on this thread. Turning it off takes the autograd keys
// out of dispatch (they join the thread-local excluded set), so a call under NoGradGuard costs
// what a call on tensors that need no gradient costs (docs/autograd.md, "Grad mode").
#include <xten/dispatch/local_dispatch_key_set.h>

namespace xten {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Records nothing for its lifetime (torch::NoGradGuard).
class NoGradGuard {
 public:
  NoGradGuard() : guard_(kAutogradKeys) {}

 private:
  ExcludeDispatchKeyGuard guard_;
};

// Sets grad mode for its lifetime, restoring the previous mode after (torch::AutoGradMode).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled);
  ~AutoGradMode();
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

// Inference mode (torch::InferenceMode): no graph and no autograd bookkeeping at all; tensors
// made inside never require grad. Nests; `InferenceMode(false)` inside restores grad mode.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  bool prev_grad_, prev_inference_;
};

}  // namespace xten
