#pragma once
// Host guards (docs/compile.md, "Training steps"): the guards of a compiled graph see its tensors'
// metadata, not the host values its constants came from. Code whose host values go into op
// arguments and change between calls (an optimizer's learning rate, set by a scheduler between
// steps) registers a check while it is captured; the check runs before each later run of that
// graph, and false recompiles.
#include <functional>

namespace xten::compiler {

// While a graph is captured on this thread, keeps `holds` with it (nothing otherwise). `holds`
// must stay callable as long as the compiled program is called: capture what it reads by value or
// through objects the program itself uses (the optimizer).
void guard_host_values(std::function<bool()> holds);

// Whether a graph is being captured on this thread (not replayed).
bool is_capturing();

}  // namespace xten::compiler
