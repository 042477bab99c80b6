#pragma once
// DistributedDataParallel: data-parallel training over the ranks of a process group
// (docs/distributed.md "DistributedDataParallel").
//
//   dist::init_process_group("gloo");
//   auto model = models::SmallCNN();
//   nn::parallel::DistributedDataParallel ddp(model.ptr());
//   for (auto& batch : loader) {             // each rank its own share (DistributedSampler)
//     optimizer.zero_grad();
//     auto loss = cross_entropy(model->forward(batch.data), batch.target);
//     loss.backward();                       // gradients averaged over the ranks here
//     optimizer.step();
//   }
//
// The module is used as it is (its forward is called directly, as in any libtorch program):
// DDP works through its parameters. Construction broadcasts rank 0's parameters and buffers.
// During each backward pass, a hook on every parameter's gradient accumulation marks it ready;
// the gradients are grouped into buckets (bucket_cap_mb, in reverse registration order, the
// order the backward pass produces them), and each full bucket is all-reduced (averaged) on the
// group's communication thread while the backward pass goes on. At the end of the pass, DDP
// waits for the buckets and writes the averages back into the gradients (or, with
// gradient_as_bucket_view, the gradients are views into the buckets and nothing is copied).
#include <memory>
#include <string>
#include <vector>

#include <xten/core/arg.h>
#include <xten/distributed/process_group.h>
#include <xten/nn/module.h>

namespace xten::nn::parallel {

struct DistributedDataParallelOptions {
  XTEN_ARG(double, bucket_cap_mb) = 25;
  // The bucket of the first parameters (the last gradients of a backward pass, so its
  // all-reduce is the one nothing hides) holds at most this much (xten's; Note [DDP buckets]).
  XTEN_ARG(double, last_bucket_cap_mb) = 1;
  // Gradients become views into the buckets (PyTorch's option of the same name): no copy back
  // after the all-reduce, and no gradient copies at all when gradients are zeroed rather than
  // set to none. The gradients then alias DDP's buckets: the next synchronized pass overwrites
  // a gradient tensor that the program kept from an earlier step.
  XTEN_ARG(bool, gradient_as_bucket_view) = false;
  // Parameters that get no gradient in a step are then reduced as zeros (and keep no gradient
  // when no rank used them); without it such a parameter raises ValueError naming it.
  XTEN_ARG(bool, find_unused_parameters) = false;
  // After each synchronized backward pass, rank 0's buffers (batch-norm running statistics)
  // are broadcast to the others, as PyTorch does before each forward.
  XTEN_ARG(bool, broadcast_buffers) = true;
  // The group to average over (null: the default group).
  XTEN_ARG(std::shared_ptr<distributed::ProcessGroup>, process_group) = nullptr;
};

class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(std::shared_ptr<Module> module,
                                   DistributedDataParallelOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  const std::shared_ptr<Module>& module() const { return module_; }
  const std::shared_ptr<distributed::ProcessGroup>& process_group() const { return group_; }

  // While the returned guard lives, backward passes only accumulate gradients locally; the
  // first synchronized pass after it reduces the sums (gradient accumulation).
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel* ddp) : ddp_(ddp), saved_(ddp->sync_) {
      ddp->sync_ = false;
    }
    ~NoSyncGuard() { ddp_->sync_ = saved_; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel* ddp_;
    bool saved_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(this); }

  // The parameters of each bucket (indices into the module's parameters()), in launch order.
  std::vector<std::vector<size_t>> bucket_indices() const;

 private:
  struct Bucket;
  void on_gradient(size_t param);
  void launch_ready();
  void finish();
  void broadcast_coalesced(const std::vector<Tensor>& tensors);
  void make_buckets();

  std::shared_ptr<Module> module_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<distributed::ProcessGroup> group_;
  std::vector<Tensor> params_;  // those that require grad, module order
  std::vector<std::string> names_;
  std::vector<int64_t> hooks_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // param -> bucket
  std::vector<Tensor> views_;      // param -> its gradient's place in its bucket
  std::vector<bool> ready_;        // param -> marked in this pass
  size_t next_launch_ = 0;
  uint64_t pass_ = 0;  // autograd's count of backward passes when this pass began
  bool in_pass_ = false;
  bool sync_ = true;
};

}  // namespace xten::nn::parallel
