#pragma once
// Host guards (docs/compile.md, "Training steps"): the guards of a compiled graph see its tensors'
// metadata, not the host values its constants came from. Code whose host values go into op
// arguments and change between calls (an optimizer's learning rate, set by a scheduler between
// steps) registers a check while it is captured; the check runs before each later run of that
// graph, and false recompiles. Values that change often (the lr of a per-step schedule) are bound
// instead: the graph reads them before each run.
#include <functional>

namespace xten::compiler {

// While a graph is captured on this thread, keeps `holds` with it (nothing otherwise). `holds`
// must stay callable as long as the compiled program is called: capture what it reads by value or
// through objects the program itself uses (the optimizer).
void guard_host_values(std::function<bool()> holds);

// While a graph is captured on this thread: the next recorded call of `op` ("xten::_fused_sgd_")
// takes its float argument `arg` ("lr") from `value()` on every run of the graph, instead of the
// constant it had when captured (an lr schedule that changes every step would otherwise
// recompile every step). Nothing outside a capture.
void bind_float_argument(const char* op, const char* arg, std::function<double()> value);

// Whether a graph is being captured on this thread (not replayed).
bool is_capturing();

}  // namespace xten::compiler
