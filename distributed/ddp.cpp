// DistributedDataParallel (docs/distributed.md "DistributedDataParallel").
//
// Note [DDP buckets]
// Buckets are filled with the parameters in reverse registration order (the order a backward
// pass usually finishes them), one dtype and device per bucket, up to bucket_cap_mb each. A
// parameter's post-accumulate hook marks it ready; a bucket whose parameters are all ready is
// launched -- its gradients concatenated and all-reduced (AVG) asynchronously -- but only after
// every bucket before it, so that every rank launches the same all-reduces in the same order
// whatever order its backward pass ran in. The first hook of a pass queues finish() to run when
// the pass ends: it launches what is left (unused parameters as zeros, or an error naming them),
// waits for the buckets in order, and copies the averages back into the gradients.
#include <xten/distributed/ddp.h>

#include <algorithm>

#include <xten/autograd/autograd.h>
#include <xten/dispatch/ops.h>
#include <xten/distributed/distributed.h>

namespace xten::nn::parallel {

namespace dist = xten::distributed;

struct DistributedDataParallel::Bucket {
  std::vector<size_t> params;
  size_t pending = 0;  // parameters not ready yet in this pass
  Tensor flat;         // the concatenated gradients being reduced
  dist::WorkPtr work;
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 DistributedDataParallelOptions options)
    : module_(std::move(module)), options_(std::move(options)) {
  const char* op = "DistributedDataParallel";
  XTEN_CHECK(module_ != nullptr, ValueError, op, "the module is null");
  XTEN_CHECK(options_.bucket_cap_mb() > 0, ValueError, op,
             "bucket_cap_mb must be positive, but got {}", options_.bucket_cap_mb());
  group_ = options_.process_group() ? options_.process_group() : dist::default_group();

  // Everyone starts from rank 0's state (also checks that the models agree: a model of another
  // size on some rank raises there and on every other rank).
  broadcast_coalesced(module_->parameters());
  broadcast_coalesced(module_->buffers());

  for (auto& [name, t] : module_->named_parameters())
    if (t.requires_grad()) {
      params_.push_back(t);
      names_.push_back(name);
    }
  // Buckets, in reverse registration order (Note [DDP buckets]).
  const double cap = options_.bucket_cap_mb() * 1024 * 1024;
  bucket_of_.assign(params_.size(), 0);
  double bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k];
    const bool fits = !buckets_.empty() && bytes + p.nbytes() <= cap &&
                      params_[buckets_.back().params.front()].dtype() == p.dtype() &&
                      params_[buckets_.back().params.front()].device() == p.device();
    if (!fits) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().params.push_back(k);
    bucket_of_[k] = buckets_.size() - 1;
    bytes += p.nbytes();
  }
  ready_.assign(params_.size(), false);
  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(params_[k].register_post_accumulate_grad_hook(
        [this, k](const Tensor&) { on_gradient(k); }));
}

DistributedDataParallel::~DistributedDataParallel() {
  for (size_t k = 0; k < params_.size(); ++k) params_[k].remove_hook(hooks_[k]);
}

std::vector<std::vector<size_t>> DistributedDataParallel::bucket_indices() const {
  std::vector<std::vector<size_t>> r;
  for (const Bucket& b : buckets_) r.push_back(b.params);
  return r;
}

void DistributedDataParallel::on_gradient(size_t param) {
  if (!sync_) return;
  if (!in_pass_) {
    in_pass_ = true;
    next_launch_ = 0;
    std::fill(ready_.begin(), ready_.end(), false);
    for (Bucket& b : buckets_) {
      b.pending = b.params.size();
      b.work.reset();
      b.flat = Tensor();
    }
    autograd::queue_callback([this] { finish(); });
  }
  if (ready_[param]) return;  // a second accumulation in the same pass (retain_graph)
  ready_[param] = true;
  --buckets_[bucket_of_[param]].pending;
  launch_ready();
}

void DistributedDataParallel::launch_ready() {
  NoGradGuard no_grad;
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_++];
    std::vector<Tensor> parts;
    for (size_t k : b.params) {
      const Tensor& p = params_[k];
      Tensor g = p.grad();
      parts.push_back(g.defined() ? g.detach().reshape({-1}) : zeros({p.numel()}, p.options()));
    }
    b.flat = cat(parts);
    b.work = group_->allreduce(b.flat, dist::ReduceOp::AVG);
  }
}

void DistributedDataParallel::finish() {
  in_pass_ = false;
  std::vector<std::string> missing;
  std::vector<uint8_t> used(params_.size(), 1);
  for (size_t k = 0; k < params_.size(); ++k)
    if (!ready_[k]) {
      missing.push_back(names_[k]);
      used[k] = 0;
    }
  if (!missing.empty() && !options_.find_unused_parameters()) {
    // Wait for what was launched, so that the ranks stay in step, then name the culprits.
    for (Bucket& b : buckets_)
      if (b.work) b.work->wait();
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 8; ++i)
      list += (i ? ", '" : "'") + missing[i] + "'";
    if (missing.size() > 8) list += fmt::format(" and {} more", missing.size() - 8);
    XTEN_FAIL(ValueError, "DistributedDataParallel",
              "parameter(s) {} received no gradient in this backward pass (rank {}); pass "
              "find_unused_parameters(true) if the model does not use every parameter in every "
              "step",
              list, group_->rank());
  }
  for (size_t k = 0; k < params_.size(); ++k)
    if (!ready_[k]) {
      ready_[k] = true;
      --buckets_[bucket_of_[k]].pending;
    }
  launch_ready();
  // Which parameters some rank used: asked on every pass that allows unused parameters (every
  // rank must make the same calls); a parameter no rank used keeps no gradient.
  Tensor used_anywhere;
  if (options_.find_unused_parameters()) {
    used_anywhere = from_blob(used.data(), {static_cast<int64_t>(used.size())}, kByte).clone();
    group_->allreduce(used_anywhere, dist::ReduceOp::MAX)->wait();
  }
  NoGradGuard no_grad;
  for (Bucket& b : buckets_) {
    b.work->wait();
    int64_t offset = 0;
    for (size_t k : b.params) {
      Tensor& p = params_[k];
      const int64_t n = p.numel();
      Tensor part = b.flat.narrow(0, offset, n).view(p.sizes());
      offset += n;
      if (used_anywhere.defined() && !used_anywhere.data_ptr<uint8_t>()[k]) continue;
      Tensor& g = p.mutable_grad();
      if (g.defined())
        g.copy_(part);
      else
        g = part.clone();
    }
    b.flat = Tensor();
    b.work.reset();
  }
  if (options_.broadcast_buffers()) broadcast_coalesced(module_->buffers());
}

// Rank 0's values into `tensors` on every rank: one broadcast per dtype and device of all of
// them concatenated (ResNet-18's 60 batch-norm buffers one by one cost 120 collectives a step).
void DistributedDataParallel::broadcast_coalesced(const std::vector<Tensor>& tensors) {
  NoGradGuard no_grad;
  std::vector<bool> done(tensors.size(), false);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (done[i]) continue;
    std::vector<size_t> same;
    for (size_t j = i; j < tensors.size(); ++j)
      if (!done[j] && tensors[j].dtype() == tensors[i].dtype() &&
          tensors[j].device() == tensors[i].device()) {
        same.push_back(j);
        done[j] = true;
      }
    std::vector<Tensor> parts;
    for (size_t j : same) parts.push_back(tensors[j].detach().reshape({-1}));
    Tensor flat = cat(parts);
    group_->broadcast(flat, 0)->wait();
    int64_t offset = 0;
    for (size_t j : same) {
      Tensor t = tensors[j].detach();
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

}  // namespace xten::nn::parallel
