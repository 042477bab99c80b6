#pragma once
// Graph passes (docs/compile.md, "Passes"). Each keeps value numbers stable (a removed node is
// marked dead; a folded result becomes a constant value) and leaves a graph that verify() accepts.
#include <xten/compile/graph.h>

namespace xten::compiler {

// Values some live node writes, directly or through a view of them (closed over the ops whose
// results alias their arguments).
std::vector<char> written_values(const Graph& g);

// Removes nodes whose results nothing reads, unless they write or draw random numbers.
int eliminate_dead_code(Graph& g);
// Removes `to` and `contiguous` calls that returned their input itself (same dtype, device and
// layout): their uses read the input.
int eliminate_identity_casts(Graph& g);
// Removes a `clone` (or its composite, a copy_ into a fresh empty) of a fresh node result that
// nothing else reads or writes: its uses read the original. The engine copies a gradient it
// cannot take over, and during a capture it never can (the tracer holds every tensor).
int eliminate_redundant_clones(Graph& g);
// Folds batch norm in evaluation mode (after constant folding: a multiply and an add by
// per-channel constants) into the convolution before it: new constant weight and bias.
int fold_batch_norm_into_conv(Graph& g, bool freeze);
// Makes a linear whose result only a relu reads one _linear_relu (on CPU one oneDNN matmul with
// the bias and relu as post-ops; docs/cpu_kernels.md, "Fused post-ops").
int fuse_linear_relu(Graph& g);
// Merges nodes computing the same op of the same arguments (not random, not written later).
int eliminate_common_subexpressions(Graph& g);
// Computes at compile time the nodes whose tensor arguments are all constants (with `freeze`,
// captured tensors no node writes are constants too) and are not random.
int fold_constants(Graph& g, bool freeze);
// Makes each CPU conv2d (float32 or bfloat16) with constant weight and bias a convolution step
// (Graph::convs): one oneDNN inference primitive with the weights reordered once, taking the
// add of a residual and a relu that follow it as post-ops, and keeping its result in oneDNN's
// layout where only other steps read it. Before fuse_pointwise.
int plan_convolutions(Graph& g, bool freeze);
// Groups chains of float32 pointwise ops of one shape on one device (CPU or an XPU) into fused
// groups (Graph::groups) and builds each group's program.
int fuse_pointwise(Graph& g);

// Whether the op draws from a generator (rand, dropout, ...) or returns uninitialized memory.
bool is_random_or_uninitialized(const Node& n);
// Whether `n` is one of the pointwise ops the fused loops compute, with one float32 result and
// no argument written: cheap to compute again where its arguments are at hand (joint.cpp).
bool is_fusable_pointwise(const Graph& g, const Node& n);

}  // namespace xten::compiler
