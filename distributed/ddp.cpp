// DistributedDataParallel (docs/distributed.md "DistributedDataParallel").
//
// Note [DDP buckets]
// Buckets are filled with the parameters in reverse registration order (the order a backward
// pass usually finishes them), one dtype and device per bucket, up to bucket_cap_mb each, except
// the last: it holds the first parameters, up to last_bucket_cap_mb. Those gradients are the
// last of the pass, so nothing hides their all-reduce; with one 25 MB cap, ResNet-18's second
// bucket held everything from layer4's middle down to conv1 (22 MB) and waited for conv1.
// Each bucket owns one flat tensor for the whole training. A parameter's post-accumulate hook
// copies its gradient into its place in the flat tensor (unless the gradient already is that
// place: gradient_as_bucket_view) and marks it ready; a bucket whose parameters are all ready is
// all-reduced (AVG) asynchronously, but only after every bucket before it, so that every rank
// launches the same all-reduces in the same order whatever order its backward pass ran in. The
// first hook of a pass queues finish() to run when the pass ends: it launches what is left
// (unused parameters as their gradient or zeros, or an error naming them), waits for the buckets
// in order, and copies the averages back into the gradients -- or, with gradient_as_bucket_view,
// makes each gradient the view of its place, which the all-reduce has already written.
// A parameter's place has the parameter's strides when the parameter is dense in them
// (channels-last weights), so the copy into it walks both in one order.
#include <xten/distributed/ddp.h>

#include <algorithm>

#include <xten/autograd/autograd.h>
#include <xten/autograd/engine.h>
#include <xten/core/meta.h>
#include <xten/dispatch/ops.h>
#include <xten/distributed/distributed.h>
#include <xten/profiler/profiler.h>

namespace xten::nn::parallel {

namespace dist = xten::distributed;

struct DistributedDataParallel::Bucket {
  std::vector<size_t> params;
  size_t pending = 0;  // parameters not ready yet in this pass
  Tensor flat;         // the bucket's gradients, one after the other
  dist::WorkPtr work;
};

namespace {

// The strides of a parameter's place in its bucket: its own when it is dense in a memory
// format (contiguous or channels-last), else contiguous ones.
DimVector place_strides(const Tensor& p) {
  if (!p.is_contiguous() && p.is_contiguous(MemoryFormat::ChannelsLast))
    return DimVector(p.strides());
  return contiguous_strides(p.sizes());
}

bool is_place(const Tensor& g, const Tensor& place) {
  return g.defined() && g.data_ptr() == place.data_ptr() && g.sizes() == place.sizes() &&
         g.strides() == place.strides() && g.dtype() == place.dtype() &&
         g.device() == place.device();
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 DistributedDataParallelOptions options)
    : module_(std::move(module)), options_(std::move(options)) {
  const char* op = "DistributedDataParallel";
  XTEN_CHECK(module_ != nullptr, ValueError, op, "the module is null");
  XTEN_CHECK(options_.bucket_cap_mb() > 0, ValueError, op,
             "bucket_cap_mb must be positive, but got {}", options_.bucket_cap_mb());
  XTEN_CHECK(options_.last_bucket_cap_mb() > 0, ValueError, op,
             "last_bucket_cap_mb must be positive, but got {}", options_.last_bucket_cap_mb());
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
  make_buckets();
  ready_.assign(params_.size(), false);
  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(params_[k].register_post_accumulate_grad_hook(
        [this, k](const Tensor&) { on_gradient(k); }));
}

// Note [DDP buckets]: the last bucket first (the first parameters up to its cap), then the rest
// from the last parameter down.
void DistributedDataParallel::make_buckets() {
  const double mb = 1024.0 * 1024.0;
  const double cap = options_.bucket_cap_mb() * mb;
  const double last_cap = std::min(options_.last_bucket_cap_mb() * mb, cap);
  auto same_kind = [&](size_t a, size_t b) {
    return params_[a].dtype() == params_[b].dtype() && params_[a].device() == params_[b].device();
  };
  size_t tail = 0;
  for (double bytes = 0; tail < params_.size() && same_kind(tail, 0); ++tail) {
    if (tail > 0 && bytes + params_[tail].nbytes() > last_cap) break;
    bytes += params_[tail].nbytes();
  }
  bucket_of_.assign(params_.size(), 0);
  auto add = [&](size_t first, size_t end, double limit) {  // params [first, end), last first
    double bytes = 0;
    bool open = false;
    for (size_t k = end; k-- > first;) {
      const Tensor& p = params_[k];
      const bool fits =
          open && bytes + p.nbytes() <= limit && same_kind(buckets_.back().params.front(), k);
      if (!fits) {
        buckets_.emplace_back();
        bytes = 0;
        open = true;
      }
      buckets_.back().params.push_back(k);
      bucket_of_[k] = buckets_.size() - 1;
      bytes += p.nbytes();
    }
  };
  add(tail, params_.size(), cap);
  add(0, tail, last_cap);

  NoGradGuard no_grad;
  views_.resize(params_.size());
  for (Bucket& b : buckets_) {
    int64_t total = 0;
    for (size_t k : b.params) total += params_[k].numel();
    const Tensor& first = params_[b.params.front()];
    b.flat = empty({total}, TensorOptions().dtype(first.dtype()).device(first.device()));
    int64_t offset = 0;
    for (size_t k : b.params) {
      views_[k] = b.flat.as_strided(params_[k].sizes(), place_strides(params_[k]), offset);
      offset += params_[k].numel();
    }
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  for (size_t k = 0; k < params_.size(); ++k) params_[k].remove_hook(hooks_[k]);
  for (Bucket& b : buckets_)
    if (b.work) {
      try {
        b.work->wait();  // the communication thread may still be writing the flat tensor
      } catch (const std::exception&) {
      }
    }
}

std::vector<std::vector<size_t>> DistributedDataParallel::bucket_indices() const {
  std::vector<std::vector<size_t>> r;
  for (const Bucket& b : buckets_) r.push_back(b.params);
  return r;
}

void DistributedDataParallel::on_gradient(size_t param) {
  if (!sync_) return;
  const uint64_t pass = autograd::backward_passes_on_this_thread();
  if (!in_pass_ || pass != pass_) {
    // A pass that ended in an exception queued a finish() that never ran: let its all-reduces
    // end before their flat tensors are written again.
    for (Bucket& b : buckets_)
      if (b.work) b.work->wait();
    in_pass_ = true;
    pass_ = pass;
    next_launch_ = 0;
    std::fill(ready_.begin(), ready_.end(), false);
    for (Bucket& b : buckets_) {
      b.pending = b.params.size();
      b.work.reset();
    }
    autograd::queue_callback([this] { finish(); });
  }
  XTEN_CHECK(!ready_[param], ValueError, "DistributedDataParallel",
             "parameter '{}' got a gradient twice in one backward pass (a graph used twice, or a "
             "reentrant backward); its bucket's all-reduce may already have started. Accumulate "
             "over several passes under no_sync() instead",
             names_[param]);
  ready_[param] = true;
  {
    NoGradGuard no_grad;
    const Tensor& g = params_[param].grad();
    if (!is_place(g, views_[param])) {
      profiler::RecordFunction range("DistributedDataParallel.copy_in");
      views_[param].copy_(g);
    }
  }
  --buckets_[bucket_of_[param]].pending;
  launch_ready();
}

void DistributedDataParallel::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_++];
    b.work = group_->allreduce(b.flat, dist::ReduceOp::AVG);
  }
}

void DistributedDataParallel::finish() {
  profiler::RecordFunction range("DistributedDataParallel.finish");
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
  NoGradGuard no_grad;
  for (size_t k = 0; k < params_.size(); ++k)
    if (!ready_[k]) {
      // Its gradient as it stands (accumulated under no_sync, or none: zeros).
      const Tensor& g = params_[k].grad();
      if (!g.defined())
        views_[k].zero_();
      else if (!is_place(g, views_[k]))
        views_[k].copy_(g);
      ready_[k] = true;
      --buckets_[bucket_of_[k]].pending;
    }
  launch_ready();
  // Which parameters some rank used: asked on every pass that allows unused parameters (every
  // rank must make the same calls); a parameter no rank used keeps the gradient it had.
  Tensor used_anywhere;
  if (options_.find_unused_parameters()) {
    used_anywhere = from_blob(used.data(), {static_cast<int64_t>(used.size())}, kByte).clone();
    group_->allreduce(used_anywhere, dist::ReduceOp::MAX)->wait();
  }
  const bool as_view = options_.gradient_as_bucket_view();
  for (Bucket& b : buckets_) {
    {
      profiler::RecordFunction wait("DistributedDataParallel.wait");  // exposed communication
      b.work->wait();
    }
    b.work.reset();
    for (size_t k : b.params) {
      if (used_anywhere.defined() && !used_anywhere.data_ptr<uint8_t>()[k]) continue;
      Tensor& g = params_[k].mutable_grad();
      if (as_view) {
        if (!is_place(g, views_[k])) g = views_[k];
      } else if (g.defined() && !is_place(g, views_[k])) {
        g.copy_(views_[k]);
      } else {
        g = views_[k].clone();
      }
    }
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
