// One rank of the multi-process tests (test_distributed.cpp starts it under xtenrun, or alone
// with RANK/WORLD_SIZE/MASTER_* set). `distributed_worker MODE`:
//   collectives  every collective, reduce op and dtype against values computed here
//   ddp          DistributedDataParallel's gradients against one process on the whole batch
//   exit         the last rank exits in the middle of the job; the others must raise
//   kill         the last rank kills itself with SIGKILL in the middle of the job; the same
//   mismatch     the ranks all-reduce tensors of different sizes; every rank must raise
//   abandon      rank 0 leaves with a collective rank 1 never joins; leaving must not hang
// Prints "rank R: ok" and exits 0 when every check held; the first failed check prints what
// differed and exits 1.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>

#include <xten/xten.h>

using namespace xten;
namespace dist = xten::distributed;

namespace {

int g_rank = -1;

#define CHECK(cond, ...)                                                                          \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::fprintf(stderr, "rank %d: check failed at line %d: %s: %s\n", g_rank, __LINE__, #cond, \
                   fmt::format(__VA_ARGS__).c_str());                                             \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// The largest |a - b| relative to 1 + |b|, in double.
double diff(const Tensor& a, const Tensor& b) {
  CHECK(a.sizes() == b.sizes(), "shapes {} and {}", a.sizes(), b.sizes());
  Tensor x = a.to(Device(kCPU)).to(kDouble).contiguous(),
         y = b.to(Device(kCPU)).to(kDouble).contiguous();
  const double* p = x.data_ptr<double>();
  const double* q = y.data_ptr<double>();
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double d = std::abs(p[i] - q[i]) / (1 + std::abs(q[i]));
    if (!(d <= worst)) worst = d;  // NaN counts as the worst
  }
  return worst;
}

double tolerance(ScalarType t) {
  return t == kHalf || t == kBFloat16 ? 2e-2 : (t == kFloat ? 1e-6 : 0);
}

// Rank r's tensor of n elements: small values that every dtype holds.
Tensor values(int r, int64_t n, ScalarType dtype) {
  Tensor i = arange(n, TensorOptions().dtype(kDouble));
  Tensor v;
  if (dtype == kBool) return (i + r).remainder(2).eq(0);
  if (is_floating_type(dtype))
    v = i.remainder(5) * 0.25 + (r + 1) * 0.5;
  else
    v = i.remainder(3) + (r + 1);
  return v.to(dtype);
}

// op over the ranks' values, computed here (in the dtype, as the collective rounds).
Tensor expected(dist::ReduceOp op, int size, int64_t n, ScalarType dtype) {
  const ScalarType acc = dtype == kBool ? kBool : (is_floating_type(dtype) ? kDouble : kLong);
  Tensor r = values(0, n, dtype).to(acc);
  for (int k = 1; k < size; ++k) {
    Tensor v = values(k, n, dtype).to(acc);
    switch (op) {
      case dist::ReduceOp::SUM:
      case dist::ReduceOp::AVG:
        r = dtype == kBool ? logical_or(r, v) : r + v;
        break;
      case dist::ReduceOp::PRODUCT:
        r = dtype == kBool ? logical_and(r, v) : r * v;
        break;
      case dist::ReduceOp::MIN:
        r = minimum(r, v);
        break;
      case dist::ReduceOp::MAX:
        r = maximum(r, v);
        break;
    }
  }
  if (op == dist::ReduceOp::AVG) r = r / size;
  return r.to(dtype);
}

void collectives(const Device& device) {
  const int rank = dist::get_rank(), size = dist::get_world_size();
  const std::vector<ScalarType> all_types{kFloat, kDouble, kHalf, kBFloat16, kLong,
                                          kInt,   kShort,  kChar, kByte,     kBool};
  const int64_t n = 7;
  auto on = [&](const Tensor& t) { return t.to(device); };
  for (ScalarType dt : all_types) {
    const std::string name = to_string(dt);
    for (auto op : {dist::ReduceOp::SUM, dist::ReduceOp::AVG, dist::ReduceOp::PRODUCT,
                    dist::ReduceOp::MIN, dist::ReduceOp::MAX}) {
      if (op == dist::ReduceOp::AVG && !is_floating_type(dt)) continue;
      Tensor t = on(values(rank, n, dt));
      dist::all_reduce(t, op);
      CHECK(diff(t, expected(op, size, n, dt)) <= tolerance(dt), "all_reduce {} {}: {}",
            dist::to_string(op), name, fmt::format("{}", t.to(Device(kCPU)).to(kDouble).sizes()));
      // reduce to every root: the root holds the result, the others keep their values.
      for (int root = 0; root < size; ++root) {
        Tensor u = on(values(rank, n, dt));
        dist::reduce(u, root, op);
        CHECK(diff(u, rank == root ? expected(op, size, n, dt) : values(rank, n, dt)) <=
                  tolerance(dt),
              "reduce {} {} to {}", dist::to_string(op), name, root);
      }
    }
    for (int root = 0; root < size; ++root) {
      Tensor t = on(values(rank, n, dt));
      dist::broadcast(t, root);
      CHECK(diff(t, values(root, n, dt)) == 0, "broadcast {} from {}", name, root);
    }
    {
      std::vector<Tensor> outs;
      for (int r = 0; r < size; ++r) outs.push_back(on(zeros({n}, TensorOptions().dtype(dt))));
      dist::all_gather(outs, on(values(rank, n, dt)));
      for (int r = 0; r < size; ++r)
        CHECK(diff(outs[r], values(r, n, dt)) == 0, "all_gather {}", name);
      Tensor flat = on(zeros({size * n}, TensorOptions().dtype(dt)));
      dist::all_gather_into_tensor(flat, on(values(rank, n, dt)));
      for (int r = 0; r < size; ++r)
        CHECK(diff(flat.narrow(0, r * n, n), values(r, n, dt)) == 0, "all_gather_into_tensor {}",
              name);
    }
    {
      // reduce_scatter: each rank's input is size chunks of n; chunk q of rank r is values(r).
      Tensor in = on(values(rank, n, dt).repeat({size}));
      Tensor out = on(zeros({n}, TensorOptions().dtype(dt)));
      dist::reduce_scatter_tensor(out, in, dist::ReduceOp::SUM);
      CHECK(diff(out, expected(dist::ReduceOp::SUM, size, n, dt)) <= tolerance(dt),
            "reduce_scatter_tensor {}", name);
    }
    {
      const int root = size - 1;
      std::vector<Tensor> outs;
      if (rank == root)
        for (int r = 0; r < size; ++r) outs.push_back(on(zeros({n}, TensorOptions().dtype(dt))));
      dist::gather(on(values(rank, n, dt)), outs, root);
      for (int r = 0; r < static_cast<int>(outs.size()); ++r)
        CHECK(diff(outs[r], values(r, n, dt)) == 0, "gather {}", name);
      std::vector<Tensor> ins;
      if (rank == 0)
        for (int r = 0; r < size; ++r) ins.push_back(on(values(r + 10, n, dt)));
      Tensor got = on(zeros({n}, TensorOptions().dtype(dt)));
      dist::scatter(got, ins, 0);
      CHECK(diff(got, values(rank + 10, n, dt)) == 0, "scatter {}", name);
    }
    {
      // all_to_all_single with uneven splits: rank r sends q + 1 rows (of 2) to rank q, each
      // row filled with 10 * r + q.
      std::vector<int64_t> in_splits, out_splits;
      std::vector<Tensor> rows_in, rows_want;
      for (int q = 0; q < size; ++q) {
        in_splits.push_back(q + 1);
        rows_in.push_back(full({q + 1, 2}, 10 * rank + q, TensorOptions().dtype(kDouble)));
        out_splits.push_back(rank + 1);
        rows_want.push_back(full({rank + 1, 2}, 10 * q + rank, TensorOptions().dtype(kDouble)));
      }
      if (dt != kBool) {
        Tensor in = on(cat(rows_in).to(dt));
        Tensor out = on(zeros({size * (rank + 1), 2}, TensorOptions().dtype(dt)));
        dist::all_to_all_single(out, in, out_splits, in_splits);
        CHECK(diff(out, cat(rows_want).to(dt)) == 0, "all_to_all_single {}", name);
      }
    }
  }
  // A strided tensor (a transposed view) is reduced through a copy and written back in place.
  {
    Tensor base = values(rank, 12, kFloat).reshape({3, 4});
    Tensor t = on(base).t();
    dist::all_reduce(t, dist::ReduceOp::SUM);
    CHECK(diff(t, expected(dist::ReduceOp::SUM, size, 12, kFloat).reshape({3, 4}).t()) == 0,
          "all_reduce of a transposed view");
  }
  // Asynchronous: several in flight, waited in reverse.
  {
    std::vector<Tensor> ts;
    std::vector<dist::WorkPtr> works;
    for (int k = 0; k < 4; ++k) {
      ts.push_back(on(full({1000}, rank + k, TensorOptions().dtype(kFloat))));
      works.push_back(dist::all_reduce(ts.back(), dist::ReduceOp::SUM, nullptr, true));
    }
    for (int k = 3; k >= 0; --k) {
      works[k]->wait();
      CHECK(works[k]->is_completed() && works[k]->is_success(), "async work {}", k);
      const double want = size * (size - 1) / 2.0 + size * k;
      CHECK(diff(ts[k], full({1000}, want, TensorOptions().dtype(kFloat))) == 0, "async {}", k);
    }
  }
  dist::barrier();
  // Point to point around the ring.
  if (size > 1) {
    Tensor mine = on(full({5}, rank, TensorOptions().dtype(kLong)));
    Tensor got = on(zeros({5}, TensorOptions().dtype(kLong)));
    auto s = dist::isend(mine, (rank + 1) % size, nullptr, 3);
    auto r = dist::irecv(got, (rank + size - 1) % size, nullptr, 3);
    r->wait();
    s->wait();
    CHECK(diff(got, full({5}, (rank + size - 1) % size, TensorOptions().dtype(kLong))) == 0,
          "send/recv");
  }
  // A subgroup of the even ranks (every rank calls new_group; the others get null).
  {
    std::vector<int> evens;
    for (int r = 0; r < size; r += 2) evens.push_back(r);
    auto g = dist::new_group(evens);
    CHECK((g != nullptr) == (rank % 2 == 0), "new_group membership");
    if (g) {
      Tensor t = on(full({3}, rank, TensorOptions().dtype(kFloat)));
      dist::all_reduce(t, dist::ReduceOp::SUM, g);
      double want = 0;
      for (int r : evens) want += r;
      CHECK(diff(t, full({3}, want, TensorOptions().dtype(kFloat))) == 0, "subgroup all_reduce");
      CHECK(dist::get_rank(g) == rank / 2 &&
                dist::get_world_size(g) == static_cast<int>(evens.size()),
            "subgroup rank/size");
      Tensor b = on(full({2}, rank, TensorOptions().dtype(kFloat)));
      dist::broadcast(b, evens.back(), g);
      CHECK(diff(b, full({2}, evens.back(), TensorOptions().dtype(kFloat))) == 0,
            "subgroup broadcast from job rank {}", evens.back());
    }
  }
  dist::barrier();
}

// ---- DDP ----------------------------------------------------------------------------------

using nn::parallel::DistributedDataParallel;
using nn::parallel::DistributedDataParallelOptions;

// The largest relative difference between two models' parameters.
double params_diff(nn::Module& a, nn::Module& b) {
  auto pa = a.parameters(), pb = b.parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) worst = std::max(worst, diff(pa[i], pb[i]));
  return worst;
}

// `steps` SGD steps of a DDP model on this rank's rows of each global batch against one model
// on the whole batch: the parameters must agree after every step. `make` builds the model
// (called with the seed: each rank starts from its own, DDP must broadcast rank 0's).
template <class Make, class Loss>
void ddp_equals_whole_batch(const char* what, Make make, Loss loss, const Tensor& x,
                            const Tensor& y, const DistributedDataParallelOptions& options,
                            int steps, bool eval, bool set_to_none = true) {
  const int rank = dist::get_rank(), size = dist::get_world_size();
  const int64_t b = x.size(0) / size;
  manual_seed(100 + rank);
  auto model = make();
  manual_seed(100);
  auto whole = make();
  if (eval) {
    model->eval();
    whole->eval();
  }
  DistributedDataParallel ddp(model.ptr(), options);
  CHECK(params_diff(*model, *whole) == 0, "{}: rank 0's parameters were not broadcast", what);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD opt_whole(whole->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  std::vector<const void*> places;  // with gradient_as_bucket_view: where each gradient lives
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad(set_to_none);
    loss(model->forward(x.narrow(0, rank * b, b)), y.narrow(0, rank * b, b)).backward();
    if (options.gradient_as_bucket_view()) {
      auto ps = model->parameters();
      for (size_t i = 0; i < ps.size(); ++i) {
        CHECK(ps[i].grad().defined() && ps[i].grad().strides() == ps[i].strides(),
              "{}: gradient {} is not in its parameter's layout", what, i);
        if (step == 0)
          places.push_back(ps[i].grad().data_ptr());
        else
          CHECK(ps[i].grad().data_ptr() == places[i],
                "{}: step {}: gradient {} moved out of its bucket", what, step, i);
      }
    }
    opt.step();
    opt_whole.zero_grad();
    loss(whole->forward(x), y).backward();
    opt_whole.step();
    const double d = params_diff(*model, *whole);
    CHECK(d <= 2e-5, "{}: step {}: DDP and the whole batch differ by {}", what, step, d);
  }
}

void ddp(const Device& device) {
  const int rank = dist::get_rank(), size = dist::get_world_size();
  auto mlp = [&] {
    auto m = nn::Sequential(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 16), nn::Tanh(),
                            nn::Linear(16, 4));
    m->to(device);
    return m;
  };
  auto mse = [](const Tensor& out, const Tensor& target) { return mse_loss(out, target); };
  manual_seed(7);
  Tensor x = randn({4 * size, 8}).to(device), y = randn({4 * size, 4}).to(device);
  // One bucket, and one bucket per parameter (several reductions in flight).
  ddp_equals_whole_batch("mlp", mlp, mse, x, y, DistributedDataParallelOptions(), 5, false);
  ddp_equals_whole_batch("mlp, small buckets", mlp, mse, x, y,
                         DistributedDataParallelOptions().bucket_cap_mb(1e-4), 5, false);
  // Gradients as views into the buckets: set to none each step (copied in by the hooks), or
  // zeroed in place (accumulated in their buckets: no copy at all).
  ddp_equals_whole_batch("mlp, views", mlp, mse, x, y,
                         DistributedDataParallelOptions().gradient_as_bucket_view(true), 5, false);
  ddp_equals_whole_batch(
      "mlp, views, zeroed, small buckets", mlp, mse, x, y,
      DistributedDataParallelOptions().gradient_as_bucket_view(true).bucket_cap_mb(1e-4), 5, false,
      /*set_to_none=*/false);
  {
    manual_seed(1);
    auto m = mlp();
    DistributedDataParallel d(m.ptr(), DistributedDataParallelOptions().bucket_cap_mb(1e-4));
    CHECK(d.bucket_indices().size() == 6, "one bucket per parameter, got {}",
          d.bucket_indices().size());
    CHECK(d.bucket_indices().front() == std::vector<size_t>{5}, "the last parameter goes first");
    // The last bucket takes the first parameters up to its own cap (512 + 64 bytes of 600).
    DistributedDataParallel tail(
        m.ptr(), DistributedDataParallelOptions().last_bucket_cap_mb(600.0 / (1024 * 1024)));
    const std::vector<std::vector<size_t>> want{{5, 4, 3, 2}, {1, 0}};
    CHECK(tail.bucket_indices() == want, "buckets with a 600-byte last bucket: {} of them",
          tail.bucket_indices().size());
  }
  if (device.is_cpu()) {
    // SmallCNN (evaluation mode: batch norm's batch statistics are per rank in training, as in
    // PyTorch, so only eval mode equals one process on the whole batch).
    auto cnn = [&] {
      auto m = models::SmallCNN(10);
      m->to(device);
      return m;
    };
    auto ce = [](const Tensor& out, const Tensor& target) { return cross_entropy(out, target); };
    manual_seed(8);
    Tensor images = randn({2 * size, 1, 28, 28}), labels = randint(0, 10, {2 * size});
    ddp_equals_whole_batch("SmallCNN", cnn, ce, images, labels, DistributedDataParallelOptions(), 3,
                           true);
    // Channels-last weights: their gradients' places in the buckets are channels-last too.
    auto cnn_cl = [&] {
      auto m = cnn();
      m->to(MemoryFormat::ChannelsLast);
      return m;
    };
    ddp_equals_whole_batch("SmallCNN channels-last, views", cnn_cl, ce, images, labels,
                           DistributedDataParallelOptions().gradient_as_bucket_view(true), 3, true);
    // Training mode: buffers follow rank 0 after each step.
    manual_seed(9);
    auto m = cnn();
    DistributedDataParallel d(m.ptr());
    const int64_t b = 2;
    cross_entropy(m->forward(images.narrow(0, rank * b, b)), labels.narrow(0, rank * b, b))
        .backward();
    for (auto& [name, buf] : m->named_buffers()) {
      Tensor mine = buf.clone(), zeroth = buf.clone();
      dist::broadcast(zeroth, 0);
      CHECK(diff(mine, zeroth) == 0, "buffer {} differs from rank 0's after a step", name);
    }
  }
  // no_sync: two micro-batches, the first accumulated locally, reduced with the second.
  {
    manual_seed(11 + rank);
    auto m = mlp();
    manual_seed(11);
    auto whole = mlp();
    DistributedDataParallel d(m.ptr());
    const int64_t b = 2;
    {
      auto guard = d.no_sync();
      mse(m->forward(x.narrow(0, rank * 2 * b, b)), y.narrow(0, rank * 2 * b, b)).backward();
    }
    mse(m->forward(x.narrow(0, rank * 2 * b + b, b)), y.narrow(0, rank * 2 * b + b, b)).backward();
    // The same sums on one process: each micro-batch's mean, summed, averaged over ranks.
    for (int r = 0; r < size; ++r)
      for (int k = 0; k < 2; ++k)
        (mse(whole->forward(x.narrow(0, r * 2 * b + k * b, b)), y.narrow(0, r * 2 * b + k * b, b)) /
         size)
            .backward();
    auto pm = m->parameters(), pw = whole->parameters();
    for (size_t i = 0; i < pm.size(); ++i)
      CHECK(diff(pm[i].grad(), pw[i].grad()) <= 1e-5, "no_sync: gradient {} differs", i);
  }
  // A backward pass that throws after DDP saw some gradients (its finish() never runs): the next
  // pass starts afresh (autograd's pass count tells) and averages as it should.
  {
    manual_seed(14 + rank);
    auto m = mlp();
    manual_seed(14);
    auto whole = mlp();
    DistributedDataParallel d(m.ptr());
    bool armed = true;
    const int64_t hook = m->parameters()[0].register_post_accumulate_grad_hook([&](const Tensor&) {
      if (!armed) return;
      armed = false;
      throw ValueError("a hook failed on purpose");
    });
    const int64_t b = 2;
    bool threw = false;
    try {
      mse(m->forward(x.narrow(0, rank * b, b)), y.narrow(0, rank * b, b)).backward();
    } catch (const ValueError&) {
      threw = true;
    }
    CHECK(threw, "the failing hook did not stop the backward pass");
    m->zero_grad();
    mse(m->forward(x.narrow(0, rank * b, b)), y.narrow(0, rank * b, b)).backward();
    for (int r = 0; r < size; ++r)
      (mse(whole->forward(x.narrow(0, r * b, b)), y.narrow(0, r * b, b)) / size).backward();
    auto pm = m->parameters(), pw = whole->parameters();
    for (size_t i = 0; i < pm.size(); ++i)
      CHECK(diff(pm[i].grad(), pw[i].grad()) <= 1e-5, "after a failed pass: gradient {} differs",
            i);
    pm[0].remove_hook(hook);
  }
  // GradScaler + autocast: the scaled gradients are averaged; an inf on rank 0 alone makes
  // every rank skip the step and back off, and the parameters stay equal across ranks.
  {
    manual_seed(13);
    auto m = mlp();
    DistributedDataParallel d(m.ptr());
    optim::SGD opt(m->parameters(), optim::SGDOptions(0.05));
    amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024));
    const ScalarType low = device.is_cpu() ? kBFloat16 : kHalf;
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      Tensor loss;
      {
        autocast::AutocastGuard ac(device.type(), low);
        loss = mse(m->forward(x.narrow(0, rank * 4, 4)), y.narrow(0, rank * 4, 4));
      }
      if (step == 1 && rank == 0) loss = loss * std::numeric_limits<float>::infinity();
      scaler.scale(loss).backward();
      const bool stepped = scaler.step(opt);
      scaler.update();
      CHECK(stepped == (step != 1), "amp step {}: stepped {}", step, stepped);
      for (auto& p : m->parameters()) {
        Tensor mine = p.detach().clone(), zeroth = p.detach().clone();
        dist::broadcast(zeroth, 0);
        CHECK(diff(mine, zeroth) == 0, "amp step {}: parameters differ across ranks", step);
      }
    }
    CHECK(scaler.get_scale() == 512, "the scale after one skipped step: {}", scaler.get_scale());
  }
  // A parameter that gets no gradient: an error naming it, or zeros with find_unused_parameters.
  {
    struct TwoHeads : nn::Module {
      nn::Linear body{nullptr}, spare{nullptr};
      TwoHeads() {
        body = register_module("body", nn::Linear(8, 4));
        spare = register_module("spare", nn::Linear(8, 4));
      }
    };
    manual_seed(12);
    auto m = std::make_shared<TwoHeads>();
    m->to(device);
    {
      DistributedDataParallel d(m);
      bool raised = false;
      try {
        mse(m->body->forward(x.narrow(0, 0, 2)), y.narrow(0, 0, 2)).backward();
      } catch (const ValueError& e) {
        raised = std::string(e.what()).find("'spare.weight'") != std::string::npos;
        CHECK(raised, "the error does not name spare.weight: {}", e.what());
      }
      CHECK(raised, "an unused parameter raised nothing");
    }
    for (auto& p : m->parameters()) p.grad() = Tensor();
    DistributedDataParallel d(m, DistributedDataParallelOptions().find_unused_parameters(true));
    // Rank 0 uses both heads, the others only the body: spare's gradient is rank 0's / size.
    Tensor in = x.narrow(0, 0, 2);
    Tensor loss = mse(m->body->forward(in), y.narrow(0, 0, 2));
    if (rank == 0) loss = loss + m->spare->forward(in).sum();
    loss.backward();
    CHECK(m->spare->weight.grad().defined(), "spare.weight has no gradient");
    Tensor want = ones({4, 1}).to(device) * in.sum(0).unsqueeze(0) / size;
    CHECK(diff(m->spare->weight.grad(), want) <= 1e-5, "spare.weight's gradient");
    // Nobody uses it in the next step: it keeps the gradient it had (none after zeroing).
    m->spare->weight.grad() = Tensor();
    m->spare->bias.grad() = Tensor();
    mse(m->body->forward(in), y.narrow(0, 0, 2)).backward();
    CHECK(!m->spare->weight.grad().defined(), "a parameter no rank used got a gradient");
  }
}

void fault(bool kill_self) {
  const int rank = dist::get_rank(), size = dist::get_world_size();
  Tensor t = ones({1000});
  const auto start = std::chrono::steady_clock::now();
  try {
    // The leaving rank may be gone before the others have finished this first collective.
    dist::all_reduce(t);
    if (rank == size - 1) {
      std::fprintf(stderr, "rank %d: leaving the job now\n", rank);
      if (kill_self) raise(SIGKILL);
      std::_Exit(3);
    }
    for (int step = 0; step < 100; ++step) dist::all_reduce(t);
  } catch (const dist::DistributedError& e) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank %d: DistributedError after %.2f s: %s\n", rank, s, e.what());
    std::exit(0);
  }
  CHECK(false, "the collectives went on without the last rank");
}

// Rank 0 leaves with an all_reduce that rank 1 never joins: destroy_process_group must not
// wait for the group's timeout (20 s here). Rank 1 stays until well after.
void abandon() {
  if (dist::get_rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(12));
    return;
  }
  Tensor t = ones({10});
  auto work = dist::all_reduce(t, dist::ReduceOp::SUM, nullptr, true);
  const auto start = std::chrono::steady_clock::now();
  dist::destroy_process_group();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("rank 0: destroyed with an operation pending in %.1f s\n", s);
  CHECK(s < 10, "destroy_process_group took {} s", s);
}

void mismatch() {
  const int rank = dist::get_rank();
  Tensor t = ones({1000 + 24 * rank});
  try {
    dist::all_reduce(t);
  } catch (const dist::DistributedError& e) {
    std::printf("rank %d: DistributedError: %s\n", rank, e.what());
    return;
  }
  CHECK(false, "all_reduce of {} elements did not raise", t.numel());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    dist::InitOptions o;
    // The fault tests must see a lost peer well before CTest's timeout.
    o.timeout = std::chrono::seconds(mode == "collectives" || mode == "ddp" ? 120 : 20);
    dist::init_process_group(o);
    g_rank = dist::get_rank();
    if (mode == "collectives") {
      collectives(Device(kCPU));
      if (xpu::is_available()) collectives(Device("xpu"));
    } else if (mode == "ddp") {
      ddp(Device(kCPU));
      if (xpu::is_available()) ddp(Device("xpu"));
    } else if (mode == "exit" || mode == "kill") {
      fault(mode == "kill");
    } else if (mode == "mismatch") {
      mismatch();
    } else if (mode == "abandon") {
      abandon();
    } else {
      std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
      return 2;
    }
    dist::destroy_process_group();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  std::printf("rank %d: ok\n", g_rank);
  return 0;
}
