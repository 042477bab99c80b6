#pragma once
// What the engine (engine.cpp, Note [Engine]) tells the layers above it.
#include <cstdint>

namespace xten::autograd {

// Backward passes (backward() and grad()) started on this thread so far. compile's capture tells
// a training step (whose backward it records) from a forward whose results need autograd
// (docs/compile.md, "Training steps").
uint64_t backward_passes_on_this_thread();

}  // namespace xten::autograd
