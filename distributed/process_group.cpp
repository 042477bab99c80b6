// ProcessGroup over Gloo (docs/distributed.md "Process groups").
//
// Note [Communication thread]
// Gloo's collectives block the thread that runs them, and every rank must run the same
// collectives in the same order. Each group owns one thread that runs its operations from a
// queue in call order: the caller validates the tensors and makes their host copies, queues the
// operation and gets a Work; the thread runs it through Gloo on host memory; Work::wait() copies
// results back into the caller's tensors on the caller's thread (an XPU tensor is written on the
// stream of the thread that owns it). Every collective of a group takes the next tag, the same
// on every rank, so Gloo tells consecutive collectives apart.
#include <xten/distributed/process_group.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <pthread.h>

#include <deque>
#include <numeric>
#include <thread>

#include <xten/autograd/grad_mode.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/dispatcher.h>
#include <xten/dispatch/ops.h>

namespace xten::distributed {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "SUM";
    case ReduceOp::AVG:
      return "AVG";
    case ReduceOp::PRODUCT:
      return "PRODUCT";
    case ReduceOp::MIN:
      return "MIN";
    case ReduceOp::MAX:
      return "MAX";
  }
  return "?";
}

// ---- Work ----------------------------------------------------------------------------------

void Work::mark_done(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

void Work::wait(Milliseconds timeout) {
  if (timeout.count() < 0) timeout = timeout_;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, timeout, [&] { return done_; }))
    throw DistributedTimeoutError(xten::detail::error_message(
        op_.c_str(), fmt::format("not done within {} ms", timeout.count())));
  if (error_) std::rethrow_exception(error_);
  if (!finished_) {
    finished_ = true;
    if (finish_) {
      lock.unlock();
      finish_();
    }
  }
}

bool Work::is_completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}
bool Work::is_success() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && !error_;
}
std::exception_ptr Work::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

// ---- helpers -------------------------------------------------------------------------------

namespace {

// Gloo's rendezvous through one of our stores.
class GlooStore final : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(std::shared_ptr<distributed::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, Bytes(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    Bytes b = store_->get(key);
    return std::vector<char>(b.begin(), b.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    store_->wait(keys, t);
  }

 private:
  std::shared_ptr<distributed::Store> store_;
};

// The host tensor an operation reads or writes for `t`: `t` itself when it is a contiguous CPU
// tensor, else a contiguous host copy (`copy_values`: with t's values; else uninitialized).
Tensor host_buffer(const Tensor& t, bool copy_values) {
  if (t.is_cpu() && t.is_contiguous()) return t;
  if (!copy_values) return empty(t.sizes(), TensorOptions().dtype(t.dtype()));
  NoGradGuard no_grad;
  return t.detach().to(Device(kCPU)).contiguous();
}

// Writes a host result back into the caller's tensor when they are not the same memory.
void write_back(Tensor& t, const Tensor& host) {
  if (t.data_ptr() == host.data_ptr() && t.is_cpu()) return;
  NoGradGuard no_grad;
  t.detach().copy_(host);
}

template <class T>
using Acc = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// c = a op b elementwise, for Gloo's reduction callbacks (bool: SUM/MAX are "or", PRODUCT/MIN
// "and"; 16-bit floats in float, rounded once).
template <class T>
gloo::AllreduceOptions::Func reduce_function(ReduceOp op) {
  auto make = [](auto f) {
    return [f](void* c, const void* a, const void* b, size_t n) {
      T* cc = static_cast<T*>(c);
      const T* aa = static_cast<const T*>(a);
      const T* bb = static_cast<const T*>(b);
      for (size_t i = 0; i < n; ++i)
        cc[i] = static_cast<T>(f(static_cast<Acc<T>>(aa[i]), static_cast<Acc<T>>(bb[i])));
    };
  };
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      if constexpr (std::is_same_v<T, bool>)
        return make([](bool x, bool y) { return x || y; });
      else
        return make([](auto x, auto y) { return x + y; });
    case ReduceOp::PRODUCT:
      if constexpr (std::is_same_v<T, bool>)
        return make([](bool x, bool y) { return x && y; });
      else
        return make([](auto x, auto y) { return x * y; });
    case ReduceOp::MIN:
      // NaN wins, as torch.minimum.
      return make([](auto x, auto y) { return x != x ? x : (y != y ? y : (y < x ? y : x)); });
    case ReduceOp::MAX:
      return make([](auto x, auto y) { return x != x ? x : (y != y ? y : (y > x ? y : x)); });
  }
  return nullptr;
}

// Divides the n elements at p by `by` (AVG's last step).
void divide(ScalarType dtype, void* p, size_t n, int by) {
  visit_dtype<dtypes::kFloating>("all_reduce", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* x = static_cast<T*>(p);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<T>(static_cast<Acc<T>>(x[i]) / by);
  });
}

// Gloo's element type of the same size as the dtype's (only the size and the reduction matter).
template <class F>
void visit_all(const char* op, ScalarType dtype, F&& f) {
  visit_dtype<dtypes::kAll>(op, dtype, std::forward<F>(f));
}

std::string shape_of(const Tensor& t) {
  return fmt::format("{}", t.sizes());
}

// `host` (contiguous, on the CPU) becomes op over the ranks' values in place (AVG: the sum
// divided by the group's size). all_reduce and reduce_scatter_tensor run this.
void gloo_allreduce(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag, const Tensor& host,
                    ReduceOp op) {
  const size_t n = host.numel();
  if (n == 0) return;
  visit_all("all_reduce", host.dtype(), [&](auto t) {
    using T = typename decltype(t)::type;
    gloo::AllreduceOptions opts(ctx);
    opts.setOutput(static_cast<T*>(host.data_ptr()), n);
    opts.setReduceFunction(reduce_function<T>(op));
    opts.setTag(tag);
    gloo::allreduce(opts);
  });
  if (op == ReduceOp::AVG) divide(host.dtype(), host.data_ptr(), n, ctx->size);
}

// `out` holds the ranks' `in` one after the other. all_gather and all_gather_into_tensor run
// this.
void gloo_allgather(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag, const Tensor& in,
                    const Tensor& out) {
  if (in.numel() == 0) return;
  visit_all("all_gather", in.dtype(), [&](auto t) {
    using T = typename decltype(t)::type;
    gloo::AllgatherOptions opts(ctx);
    opts.setInput(static_cast<T*>(in.data_ptr()), in.numel());
    opts.setOutput(static_cast<T*>(out.data_ptr()), out.numel());
    opts.setTag(tag);
    gloo::allgather(opts);
  });
}

}  // namespace

// ---- the group -----------------------------------------------------------------------------

struct ProcessGroup::Impl {
  std::shared_ptr<gloo::rendezvous::Context> context;
  uint32_t next_tag = 0;  // the next collective's tag (Note [Communication thread])
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::pair<WorkPtr, std::function<void()>>> queue;
  bool stopping = false;
  bool busy = false;  // an operation is running
  std::condition_variable idle;
  std::thread thread;

  void loop() {
    while (true) {
      std::pair<WorkPtr, std::function<void()>> item;
      {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;
        item = std::move(queue.front());
        queue.pop_front();
        busy = true;
      }
      std::exception_ptr error;
      try {
        item.second();
      } catch (...) {
        error = std::current_exception();
      }
      item.first->mark_done(error);
      {
        std::lock_guard<std::mutex> lock(mutex);
        busy = false;
      }
      idle.notify_all();
    }
  }
};

ProcessGroup::ProcessGroup(std::shared_ptr<Store> store, int rank, int size, Milliseconds timeout,
                           const std::string& address, std::vector<int> global_ranks)
    : store_(std::move(store)),
      rank_(rank),
      size_(size),
      global_ranks_(std::move(global_ranks)),
      timeout_(timeout),
      impl_(std::make_unique<Impl>()) {
  XTEN_CHECK(size >= 1, ValueError, "ProcessGroup", "world size must be at least 1, but got {}",
             size);
  XTEN_CHECK(rank >= 0 && rank < size, ValueError, "ProcessGroup",
             "rank must be in [0, {}), but got {}", size, rank);
  if (global_ranks_.empty()) {
    global_ranks_.resize(size);
    std::iota(global_ranks_.begin(), global_ranks_.end(), 0);
  }
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = address;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    impl_->context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    impl_->context->setTimeout(timeout);
    GlooStore gloo_store(store_);
    impl_->context->connectFullMesh(gloo_store, device);
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError(xten::detail::error_message(
        "init_process_group",
        fmt::format("rank {} of {} could not connect to the others: {}", rank, size, e.what())));
  }
  impl_->thread = std::thread([impl = impl_.get()] {
    pthread_setname_np(pthread_self(), "xten-comm");  // as top and gdb show it
    impl->loop();
  });
}

// Operations still queued run first. One that cannot finish (a peer alive but not taking part)
// would hold the destructor, and so the program's exit, until the group's timeout: after a few
// seconds the thread is left to itself, with the state it uses (leaked on purpose).
ProcessGroup::~ProcessGroup() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->stopping = true;
  impl_->cv.notify_all();
  const bool drained = impl_->idle.wait_for(lock, std::chrono::seconds(5),
                                            [&] { return !impl_->busy && impl_->queue.empty(); });
  lock.unlock();
  if (drained) {
    impl_->thread.join();
  } else {
    impl_->thread.detach();
    (void)impl_.release();
  }
}

void ProcessGroup::check_rank(const char* op, const char* what, int r) const {
  XTEN_CHECK(r >= 0 && r < size_, ValueError, op, "{} must be in [0, {}), but got {}", what, size_,
             r);
}

namespace detail {

// Note [Agreement before a collective]
// Gloo cannot recover when the ranks' buffers disagree in size (its transport aborts the
// process), so every collective first all-gathers a few integers saying what each rank is about
// to do (dtype, element count, root, reduce op; for all_to_all the split sizes) and raises on
// every rank, naming them, when they differ. It costs one small all-gather per collective
// (docs/distributed.md "Costs").
struct CollectiveHeader {
  std::vector<int64_t> fields;           // equal on every rank
  std::vector<int64_t> sends, receives;  // all_to_all: elements to and from each rank
};
const char* const kCollectives[] = {"all_reduce", "broadcast",      "reduce",
                                    "all_gather", "reduce_scatter", "gather",
                                    "scatter",    "all_to_all",     "barrier"};

std::string describe(const int64_t* f) {
  return fmt::format("{} of {} elements of dtype {} (root {}, op {})", kCollectives[f[0]], f[2],
                     to_string(static_cast<ScalarType>(f[1])), f[3],
                     to_string(static_cast<ReduceOp>(f[4])));
}

void check_agreement(const char* op, const std::shared_ptr<gloo::Context>& ctx, uint32_t tag,
                     const CollectiveHeader& h) {
  const int size = ctx->size, me = ctx->rank;
  std::vector<int64_t> mine = h.fields;
  mine.insert(mine.end(), h.sends.begin(), h.sends.end());
  mine.insert(mine.end(), h.receives.begin(), h.receives.end());
  const size_t n = mine.size();
  std::vector<int64_t> all(n * size);
  gloo::AllgatherOptions opts(ctx);
  opts.setInput(mine.data(), n);
  opts.setOutput(all.data(), all.size());
  opts.setTag(tag);
  gloo::allgather(opts);
  const size_t f = h.fields.size();
  for (int r = 0; r < size; ++r) {
    const int64_t* theirs = &all[r * n];
    if (!std::equal(theirs, theirs + f, mine.data()))
      throw DistributedError(xten::detail::error_message(
          op, fmt::format("the ranks disagree: rank {} has {}, rank {} has {}", me,
                          describe(mine.data()), r, describe(theirs))));
    if (!h.sends.empty() && theirs[f + me] != h.receives[r])
      throw DistributedError(xten::detail::error_message(
          op, fmt::format("the ranks disagree: rank {} sends {} elements to rank {}, which "
                          "expects {}",
                          r, theirs[f + me], me, h.receives[r])));
  }
}

// `kind`: the index of the collective in kCollectives.
CollectiveHeader header(int kind, ScalarType dtype, int64_t numel, int root = -1,
                        ReduceOp op = ReduceOp::SUM) {
  return {{kind, static_cast<int64_t>(dtype), numel, root, static_cast<int64_t>(op)}, {}, {}};
}

}  // namespace detail

WorkPtr ProcessGroup::enqueue(std::string op, detail::CollectiveHeader check,
                              std::function<void(uint32_t)> run, std::function<void()> finish) {
  // Communication is outside what a compiled graph replays: a collective in a captured program
  // is a graph break (docs/compile.md, "Training steps": a DDP step runs eagerly).
  xten::detail::on_graph_break(op.c_str());
  auto work = std::make_shared<Work>(op, timeout_, std::move(finish));
  const int rank = rank_, size = size_;
  std::shared_ptr<gloo::Context> ctx = impl_->context;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    // Two tags per collective: the agreement's and the operation's.
    const uint32_t tag = 2 * impl_->next_tag++;
    impl_->queue.emplace_back(
        work, [run = std::move(run), check = std::move(check), op, tag, rank, size, ctx]() {
          try {
            if (size > 1) detail::check_agreement(op.c_str(), ctx, tag, check);
            run(tag + 1);
          } catch (const Error&) {
            throw;
          } catch (const std::exception& e) {
            throw DistributedError(xten::detail::error_message(
                op.c_str(), fmt::format("rank {} of {}: {}", rank, size, e.what())));
          }
        });
  }
  impl_->cv.notify_one();
  return work;
}

namespace {
void check_tensor(const char* op, const char* what, const Tensor& t) {
  XTEN_CHECK(t.defined(), ValueError, op, "{} is undefined", what);
  XTEN_CHECK(t.is_cpu() || t.is_xpu(), NotImplementedError, op,
             "{} is on {}: collectives take CPU and XPU tensors", what, t.device().str());
}
void check_like(const char* op, const char* what, const Tensor& t, const Tensor& like) {
  check_tensor(op, what, t);
  XTEN_CHECK(t.dtype() == like.dtype(), TypeError, op, "{} has dtype {}, expected {}", what,
             to_string(t.dtype()), to_string(like.dtype()));
}
}  // namespace

WorkPtr ProcessGroup::allreduce(Tensor& tensor, ReduceOp op) {
  const char* name = "all_reduce";
  check_tensor(name, "the tensor", tensor);
  XTEN_CHECK(op != ReduceOp::AVG || is_floating_type(tensor.dtype()), TypeError, name,
             "AVG needs a floating dtype, but the tensor is {}", to_string(tensor.dtype()));
  Tensor host = host_buffer(tensor, true);
  auto ctx = impl_->context;
  const ScalarType dtype = tensor.dtype();
  return enqueue(
      name, detail::header(0, dtype, host.numel(), -1, op),
      [=](uint32_t tag) { gloo_allreduce(ctx, tag, host, op); },
      [tensor, host]() mutable { write_back(tensor, host); });
}

WorkPtr ProcessGroup::broadcast(Tensor& tensor, int root) {
  const char* name = "broadcast";
  check_tensor(name, "the tensor", tensor);
  check_rank(name, "src", root);
  Tensor host = host_buffer(tensor, rank_ == root);
  auto ctx = impl_->context;
  const ScalarType dtype = tensor.dtype();
  return enqueue(
      name, detail::header(1, dtype, host.numel(), root),
      [=](uint32_t tag) {
        if (host.numel() == 0) return;
        visit_all(name, dtype, [&](auto t) {
          using T = typename decltype(t)::type;
          gloo::BroadcastOptions opts(ctx);
          opts.setOutput(static_cast<T*>(host.data_ptr()), host.numel());
          opts.setRoot(root);
          opts.setTag(tag);
          gloo::broadcast(opts);
        });
      },
      [tensor, host]() mutable { write_back(tensor, host); });
}

WorkPtr ProcessGroup::reduce(Tensor& tensor, int root, ReduceOp op) {
  const char* name = "reduce";
  check_tensor(name, "the tensor", tensor);
  check_rank(name, "dst", root);
  XTEN_CHECK(op != ReduceOp::AVG || is_floating_type(tensor.dtype()), TypeError, name,
             "AVG needs a floating dtype, but the tensor is {}", to_string(tensor.dtype()));
  // Gloo's reduce uses the buffer as scratch on every rank: non-roots reduce a copy.
  Tensor host = rank_ == root ? host_buffer(tensor, true)
                              : tensor.detach().to(Device(kCPU), true).contiguous();
  auto ctx = impl_->context;
  const ScalarType dtype = tensor.dtype();
  const int size = size_;
  const bool is_root = rank_ == root;
  return enqueue(
      name, detail::header(2, dtype, host.numel(), root, op),
      [=](uint32_t tag) {
        const size_t n = host.numel();
        if (n == 0) return;
        visit_all(name, dtype, [&](auto t) {
          using T = typename decltype(t)::type;
          gloo::ReduceOptions opts(ctx);
          opts.setOutput(static_cast<T*>(host.data_ptr()), n);
          opts.setRoot(root);
          opts.setReduceFunction(reduce_function<T>(op));
          opts.setTag(tag);
          gloo::reduce(opts);
        });
        if (is_root && op == ReduceOp::AVG) divide(dtype, host.data_ptr(), n, size);
      },
      [tensor, host, is_root]() mutable {
        if (is_root) write_back(tensor, host);
      });
}

WorkPtr ProcessGroup::allgather_into_tensor(Tensor& output, const Tensor& input) {
  const char* name = "all_gather_into_tensor";
  check_tensor(name, "the input", input);
  check_like(name, "the output", output, input);
  XTEN_CHECK(output.numel() == input.numel() * size_, ValueError, name,
             "the output {} must hold {} inputs of shape {} ({} elements), but has {}",
             shape_of(output), size_, shape_of(input), input.numel() * size_, output.numel());
  Tensor in = host_buffer(input, true);
  Tensor out = host_buffer(output, false);
  auto ctx = impl_->context;
  const ScalarType dtype = input.dtype();
  return enqueue(
      name, detail::header(3, dtype, in.numel()),
      [=](uint32_t tag) { gloo_allgather(ctx, tag, in, out); },
      [output, out]() mutable { write_back(output, out); });
}

WorkPtr ProcessGroup::allgather(std::vector<Tensor>& outputs, const Tensor& input) {
  const char* name = "all_gather";
  check_tensor(name, "the input", input);
  XTEN_CHECK(static_cast<int>(outputs.size()) == size_, ValueError, name,
             "needs one output per rank ({}), but got {}", size_, outputs.size());
  for (size_t r = 0; r < outputs.size(); ++r) {
    check_like(name, "an output", outputs[r], input);
    XTEN_CHECK(outputs[r].sizes() == input.sizes(), ValueError, name,
               "output {} has shape {}, but the input has {}", r, shape_of(outputs[r]),
               shape_of(input));
  }
  std::vector<int64_t> shape{size_};
  for (int64_t s : input.sizes()) shape.push_back(s);
  Tensor all = empty(shape, TensorOptions().dtype(input.dtype()));
  Tensor in = host_buffer(input, true);
  auto ctx = impl_->context;
  const ScalarType dtype = input.dtype();
  return enqueue(
      name, detail::header(3, dtype, in.numel()),
      [=](uint32_t tag) { gloo_allgather(ctx, tag, in, all); },
      [outputs, all]() mutable {
        NoGradGuard no_grad;
        for (size_t r = 0; r < outputs.size(); ++r) outputs[r].detach().copy_(all.select(0, r));
      });
}

WorkPtr ProcessGroup::reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op) {
  const char* name = "reduce_scatter_tensor";
  check_tensor(name, "the input", input);
  check_like(name, "the output", output, input);
  XTEN_CHECK(input.numel() == output.numel() * size_, ValueError, name,
             "the input {} must hold {} outputs of shape {} ({} elements), but has {}",
             shape_of(input), size_, shape_of(output), output.numel() * size_, input.numel());
  XTEN_CHECK(op != ReduceOp::AVG || is_floating_type(input.dtype()), TypeError, name,
             "AVG needs a floating dtype, but the input is {}", to_string(input.dtype()));
  // Reduced whole on every rank (a copy: the input is left as it was), then this rank's chunk.
  Tensor all = input.detach().to(Device(kCPU), true).contiguous();
  auto ctx = impl_->context;
  const ScalarType dtype = input.dtype();
  const int64_t chunk = output.numel(), offset = chunk * rank_;
  return enqueue(
      name, detail::header(4, dtype, all.numel(), -1, op),
      [=](uint32_t tag) { gloo_allreduce(ctx, tag, all, op); },
      [output, all, chunk, offset]() mutable {
        NoGradGuard no_grad;
        output.detach().copy_(all.reshape({-1}).narrow(0, offset, chunk).view(output.sizes()));
      });
}

WorkPtr ProcessGroup::gather(std::vector<Tensor>& outputs, const Tensor& input, int root) {
  const char* name = "gather";
  check_tensor(name, "the input", input);
  check_rank(name, "dst", root);
  const bool is_root = rank_ == root;
  if (is_root) {
    XTEN_CHECK(static_cast<int>(outputs.size()) == size_, ValueError, name,
               "the destination needs one output per rank ({}), but got {}", size_, outputs.size());
    for (size_t r = 0; r < outputs.size(); ++r) {
      check_like(name, "an output", outputs[r], input);
      XTEN_CHECK(outputs[r].sizes() == input.sizes(), ValueError, name,
                 "output {} has shape {}, but the input has {}", r, shape_of(outputs[r]),
                 shape_of(input));
    }
  } else {
    XTEN_CHECK(outputs.empty(), ValueError, name,
               "only the destination (rank {}) takes outputs, but rank {} got {}", root, rank_,
               outputs.size());
  }
  std::vector<int64_t> shape{is_root ? size_ : 0};
  for (int64_t s : input.sizes()) shape.push_back(s);
  Tensor all = empty(shape, TensorOptions().dtype(input.dtype()));
  Tensor in = host_buffer(input, true);
  auto ctx = impl_->context;
  const ScalarType dtype = input.dtype();
  return enqueue(
      name, detail::header(5, dtype, in.numel(), root),
      [=](uint32_t tag) {
        if (in.numel() == 0) return;
        visit_all(name, dtype, [&](auto t) {
          using T = typename decltype(t)::type;
          gloo::GatherOptions opts(ctx);
          opts.setInput(static_cast<T*>(in.data_ptr()), in.numel());
          if (is_root) opts.setOutput(static_cast<T*>(all.data_ptr()), all.numel());
          opts.setRoot(root);
          opts.setTag(tag);
          gloo::gather(opts);
        });
      },
      [outputs, all]() mutable {
        NoGradGuard no_grad;
        for (size_t r = 0; r < outputs.size(); ++r) outputs[r].detach().copy_(all.select(0, r));
      });
}

WorkPtr ProcessGroup::scatter(Tensor& output, const std::vector<Tensor>& inputs, int root) {
  const char* name = "scatter";
  check_tensor(name, "the output", output);
  check_rank(name, "src", root);
  const bool is_root = rank_ == root;
  std::vector<Tensor> ins;
  if (is_root) {
    XTEN_CHECK(static_cast<int>(inputs.size()) == size_, ValueError, name,
               "the source needs one input per rank ({}), but got {}", size_, inputs.size());
    for (size_t r = 0; r < inputs.size(); ++r) {
      check_like(name, "an input", inputs[r], output);
      XTEN_CHECK(inputs[r].sizes() == output.sizes(), ValueError, name,
                 "input {} has shape {}, but the output has {}", r, shape_of(inputs[r]),
                 shape_of(output));
      ins.push_back(host_buffer(inputs[r], true));
    }
  } else {
    XTEN_CHECK(inputs.empty(), ValueError, name,
               "only the source (rank {}) takes inputs, but rank {} got {}", root, rank_,
               inputs.size());
  }
  Tensor out = host_buffer(output, false);
  auto ctx = impl_->context;
  const ScalarType dtype = output.dtype();
  return enqueue(
      name, detail::header(6, dtype, out.numel(), root),
      [=](uint32_t tag) {
        if (out.numel() == 0) return;
        visit_all(name, dtype, [&](auto t) {
          using T = typename decltype(t)::type;
          gloo::ScatterOptions opts(ctx);
          if (is_root) {
            std::vector<T*> ptrs;
            for (const Tensor& in : ins) ptrs.push_back(static_cast<T*>(in.data_ptr()));
            opts.setInputs(ptrs, out.numel());
          }
          opts.setOutput(static_cast<T*>(out.data_ptr()), out.numel());
          opts.setRoot(root);
          opts.setTag(tag);
          gloo::scatter(opts);
        });
      },
      [output, out]() mutable { write_back(output, out); });
}

WorkPtr ProcessGroup::alltoall_single(Tensor& output, const Tensor& input,
                                      const std::vector<int64_t>& output_split_sizes,
                                      const std::vector<int64_t>& input_split_sizes) {
  const char* name = "all_to_all_single";
  check_tensor(name, "the input", input);
  check_like(name, "the output", output, input);
  XTEN_CHECK(input.dim() >= 1 && output.dim() >= 1, ValueError, name,
             "input and output need a dim 0 to split, but have shapes {} and {}", shape_of(input),
             shape_of(output));
  const int64_t row_in = input.numel() / std::max<int64_t>(input.size(0), 1);
  const int64_t row_out = output.numel() / std::max<int64_t>(output.size(0), 1);
  auto splits = [&](const std::vector<int64_t>& given, const Tensor& t, const char* what) {
    std::vector<int64_t> s = given;
    if (s.empty()) {
      XTEN_CHECK(t.size(0) % size_ == 0, ValueError, name,
                 "without split sizes, the {}'s dim 0 ({}) must divide by the group size {}", what,
                 t.size(0), size_);
      s.assign(size_, t.size(0) / size_);
    }
    XTEN_CHECK(static_cast<int>(s.size()) == size_, ValueError, name,
               "needs {} {} split sizes, but got {}", size_, what, s.size());
    int64_t total = 0;
    for (int64_t v : s) {
      XTEN_CHECK(v >= 0, ValueError, name, "{} split sizes must not be negative, got {}", what, v);
      total += v;
    }
    XTEN_CHECK(total == t.size(0), ValueError, name,
               "the {} split sizes add up to {}, but its dim 0 is {}", what, total, t.size(0));
    return s;
  };
  std::vector<int64_t> in_counts = splits(input_split_sizes, input, "input");
  std::vector<int64_t> out_counts = splits(output_split_sizes, output, "output");
  XTEN_CHECK(row_in == row_out || input.size(0) == 0 || output.size(0) == 0, ValueError, name,
             "input rows ({} elements) and output rows ({}) differ", row_in, row_out);
  for (auto& v : in_counts) v *= row_in;
  for (auto& v : out_counts) v *= row_out;
  Tensor in = host_buffer(input, true);
  Tensor out = host_buffer(output, false);
  auto ctx = impl_->context;
  const ScalarType dtype = input.dtype();
  return enqueue(
      name,
      detail::CollectiveHeader{
          {7, static_cast<int64_t>(dtype), row_in, -1, 0}, in_counts, out_counts},
      [=](uint32_t tag) {
        visit_all(name, dtype, [&](auto t) {
          using T = typename decltype(t)::type;
          // Gloo wants a buffer even for no elements.
          T dummy[1];
          T* ip = in.numel() ? static_cast<T*>(in.data_ptr()) : dummy;
          T* op = out.numel() ? static_cast<T*>(out.data_ptr()) : dummy;
          gloo::AlltoallvOptions opts(ctx);
          opts.setInput(ip, in_counts);
          opts.setOutput(op, out_counts);
          opts.setTag(tag);
          gloo::alltoallv(opts);
        });
      },
      [output, out]() mutable { write_back(output, out); });
}

WorkPtr ProcessGroup::barrier() {
  auto ctx = impl_->context;
  return enqueue(
      "barrier", detail::header(8, kBool, 0),
      [=](uint32_t tag) {
        gloo::BarrierOptions opts(ctx);
        opts.setTag(tag);
        gloo::barrier(opts);
      },
      nullptr);
}

namespace {
// Send/recv slots: Gloo's collectives use prefixes 1..8; point to point takes its own.
constexpr uint8_t kPointToPointPrefix = 0x40;
}  // namespace

WorkPtr ProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  const char* name = "send";
  check_tensor(name, "the tensor", tensor);
  check_rank(name, "dst", dst);
  XTEN_CHECK(dst != rank_, ValueError, name, "rank {} cannot send to itself", rank_);
  XTEN_CHECK(tag >= 0, ValueError, name, "tag must not be negative, got {}", tag);
  Tensor host = host_buffer(tensor, true);
  if (host.data_ptr() == tensor.data_ptr()) host = tensor;  // kept alive until wait()
  auto buf = std::shared_ptr<gloo::transport::UnboundBuffer>(
      impl_->context->createUnboundBuffer(host.data_ptr(), host.nbytes()));
  buf->send(dst, gloo::Slot::build(kPointToPointPrefix, static_cast<uint32_t>(tag)));
  auto work = std::make_shared<Work>(name, timeout_, nullptr);
  const Milliseconds timeout = timeout_;
  const int rank = rank_;
  // Completed by a helper thread that waits on Gloo, so wait(timeout) and is_completed() work.
  std::thread([work, buf, host, timeout, name, rank, dst, ctx = impl_->context]() {
    std::exception_ptr error;
    try {
      if (!buf->waitSend(timeout))
        throw DistributedTimeoutError(xten::detail::error_message(
            name,
            fmt::format("rank {} -> {}: not received within {} ms", rank, dst, timeout.count())));
    } catch (const DistributedError&) {
      error = std::current_exception();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(DistributedError(xten::detail::error_message(
          name, fmt::format("rank {} -> {}: {}", rank, dst, e.what()))));
    }
    work->mark_done(error);
  }).detach();
  return work;
}

WorkPtr ProcessGroup::recv(Tensor& tensor, int src, int tag) {
  const char* name = "recv";
  check_tensor(name, "the tensor", tensor);
  check_rank(name, "src", src);
  XTEN_CHECK(src != rank_, ValueError, name, "rank {} cannot receive from itself", rank_);
  XTEN_CHECK(tag >= 0, ValueError, name, "tag must not be negative, got {}", tag);
  Tensor host = host_buffer(tensor, false);
  auto buf = std::shared_ptr<gloo::transport::UnboundBuffer>(
      impl_->context->createUnboundBuffer(host.data_ptr(), host.nbytes()));
  buf->recv(src, gloo::Slot::build(kPointToPointPrefix, static_cast<uint32_t>(tag)));
  auto work = std::make_shared<Work>(name, timeout_,
                                     [tensor, host]() mutable { write_back(tensor, host); });
  const Milliseconds timeout = timeout_;
  const int rank = rank_;
  std::thread([work, buf, host, timeout, name, rank, src, ctx = impl_->context]() {
    std::exception_ptr error;
    try {
      if (!buf->waitRecv(timeout))
        throw DistributedTimeoutError(xten::detail::error_message(
            name, fmt::format("rank {} <- {}: nothing arrived within {} ms", rank, src,
                              timeout.count())));
    } catch (const DistributedError&) {
      error = std::current_exception();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(DistributedError(xten::detail::error_message(
          name, fmt::format("rank {} <- {}: {}", rank, src, e.what()))));
    }
    work->mark_done(error);
  }).detach();
  return work;
}

}  // namespace xten::distributed
