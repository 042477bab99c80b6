// oneDNN on the CPU (docs/cpu_kernels.md): one engine, a stream per call, and a bounded LRU
// cache of primitives keyed by everything that shapes them (op, dtype, sizes, strides,
// geometry), so a training loop builds each primitive once. Convolutions let oneDNN choose its
// memory formats ("any") and reorder the plain NCHW tensors into and out of them; the reorders
// are cached with the primitive. oneDNN threads through OpenMP, as xten does: every call runs
// with at most xten's get_num_threads() (Note [oneDNN threads]), and inside one of xten's parallel
// regions oneDNN runs on the calling thread only (OpenMP does not nest here), so threads never
// multiply.
#include <xten/kernels/cpu/onednn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <xten/core/cpu_backend.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/ops.h>

namespace xten::cpu::onednn {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dims = memory::dims;

// A forced XTEN_CPU_CAPABILITY caps oneDNN's instructions too (Note [CPU capability] in
// core/cpu_backend.h), unless oneDNN's own variable sets the cap. Must run before oneDNN makes
// its first JIT kernel: engine() and the sgemm path call it first.
void cap_isa_once() {
  static const bool capped = [] {
    if (!cpu_capability_forced() || std::getenv("DNNL_MAX_CPU_ISA") ||
        std::getenv("ONEDNN_MAX_CPU_ISA"))
      return false;
    const dnnl::cpu_isa cap = cpu_capability() == CpuCapability::Avx512 ? dnnl::cpu_isa::avx512_core
                              : cpu_capability() == CpuCapability::Avx2 ? dnnl::cpu_isa::avx2
                                                                        : dnnl::cpu_isa::sse41;
    return dnnl::set_max_cpu_isa(cap) == dnnl::status::success;
  }();
  (void)capped;
}

dnnl::engine& engine() {
  // Never destroyed, like the cache: other threads may still run primitives while the
  // process exits.
  static auto* e = [] {
    cap_isa_once();
    return new dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return *e;
}

std::optional<memory::data_type> data_type(ScalarType t) {
  switch (t) {
    case kFloat:
      return memory::data_type::f32;
    case kBFloat16:
      return memory::data_type::bf16;
    case kHalf:
      return memory::data_type::f16;
    default:
      return std::nullopt;
  }
}

// A primitive and the reorders around it (convolutions), or `ok = false` where oneDNN
// refused the case (remembered, so the refusal costs one try).
// Every primitive takes its scratchpad from the caller (scratchpad_mode::user): a primitive
// with a scratchpad of its own computes garbage when two threads run it at once (measured: the
// same 256x256 product from 8 threads of a parallel region differed by up to 97).
struct Step {
  dnnl::primitive prim;
  memory::desc scratchpad;
};
// A convolution reads two tensors and writes one: forward src and weights into dst, backward
// weights src and diff_dst into diff_weights; "src", "weights", "dst" name the three roles.
struct Entry {
  bool ok = false;
  Step main;
  memory::desc src, weights, dst;                 // the primitive's formats
  memory::desc user_src, user_weights, user_dst;  // the tensors' (plain) formats
  std::optional<Step> src_in, weights_in, dst_out;
  int src_arg = DNNL_ARG_SRC, weights_arg = DNNL_ARG_WEIGHTS, dst_arg = DNNL_ARG_DST;
  int threads = 1;  // what it was built for (Note [oneDNN threads])
  // Note [Packed int8 weights]: the int8 products keep their weights reordered into the
  // primitive's format, keyed by the weight tensor (held, so that its memory cannot be reused by
  // another) and its version; a weight written in place is reordered again.
  struct Packed {
    Tensor source, packed;
    uint32_t version;
  };
  mutable std::mutex packed_mutex;
  mutable std::list<Packed> packed;
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

template <class Prim, class PD>
Step step_of(const PD& pd) {
  return {Prim(pd), pd.scratchpad_desc()};
}

Step reorder_step(const memory::desc& from, const memory::desc& to) {
  return step_of<dnnl::reorder>(
      dnnl::reorder::primitive_desc(engine(), from, engine(), to, user_scratchpad()));
}

// Note [oneDNN threads]: a primitive runs on one thread below kParallelFlops of work and on
// xten's whole team (get_num_threads()) above it, never on a count in between: OpenMP teams of
// changing sizes make libgomp end and create threads (Note [One OpenMP team] in
// core/parallel.cpp). The rule was min(team, one thread per 5 MFLOP) before; on the 16-core
// host that ran the MLP's 64x784x256 product on 5 threads between 16-thread loops, and the
// nn step took 759-843 us at 16 threads against 240-429 us with the product on all 16. Below
// 1 MFLOP the team loses: the MLP's 64 x 10 x 256 backward product took 128 us on 16 threads
// against 13 on one (bench/README.md, "One OpenMP team size").
constexpr double kParallelFlops = 1e6;
int threads_for(double flops) {
  return flops < kParallelFlops ? 1 : get_num_threads();
}

// oneDNN's OpenMP threads on this thread: `n` (inside a parallel region OpenMP runs oneDNN on
// the calling thread anyway).
void use_threads(int n) {
  if (!omp_in_parallel() && omp_get_max_threads() != n) omp_set_num_threads(n);
}

// Least recently used entries go first beyond kCapacity.
class Cache {
 public:
  static constexpr size_t kCapacity = 512;
  // The entry for `key` and the thread count for `flops` of work (oneDNN's JIT kernels settle
  // their thread split when built, so a primitive is built per thread count, with that count
  // set; Note [oneDNN threads]).
  template <class Make>
  std::shared_ptr<const Entry> get(const std::string& op_key, double flops, Make&& make) {
    const int threads = threads_for(flops);
    use_threads(threads);
    const std::string key = fmt::format("{} threads {}", op_key, threads);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        items_.splice(items_.begin(), items_, it->second);
        return it->second->second;
      }
    }
    auto entry = std::make_shared<Entry>();
    try {
      make(*entry);
      entry->ok = true;
      entry->threads = threads;
    } catch (const dnnl::error&) {
      entry = std::make_shared<Entry>();  // unsupported here: the caller's Eigen path runs
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;
    items_.emplace_front(key, entry);
    index_[key] = items_.begin();
    if (items_.size() > kCapacity) {
      index_.erase(items_.back().first);
      items_.pop_back();
    }
    return entry;
  }

 private:
  std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const Entry>>> items_;
  std::unordered_map<std::string, decltype(items_)::iterator> index_;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed (see engine())
  return *c;
}

// A scratch buffer of `desc`'s size from xten's allocator, as oneDNN memory.
memory scratch(const memory::desc& desc, Tensor& keep) {
  keep = empty_tensor({static_cast<int64_t>(desc.get_size())}, kByte, Device("cpu"));
  return memory(desc, engine(), keep.data_ptr());
}

// The strides oneDNN is given: a dimension of size 1 gets the stride of an outermost one (its
// stride is never used, but oneDNN reads a format from the stride order). A batch of one made
// by unsqueeze(0) of a transposed weight has stride 256 in front of strides (1, 256): oneDNN
// 2.6 read that as format `cab`, which its brgemm matmul rejects, and fell back to its older
// gemm: the MLP's 64x256 -> 10 linear took 13.7 us instead of 5.3.
dims strides_of(const Tensor& t) {
  dims out(t.strides().begin(), t.strides().end());
  int64_t outer = 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) outer = std::max(outer, t.size(d) * t.stride(d));
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) == 1) out[static_cast<size_t>(d)] = outer;
  return out;
}

// The weight of a convolution in oneDNN's order (groups, out, in, kh, kw), from xten's layout
// with `o_stride` and `i_stride` per output and input channel and (kh_stride, kw_stride)
// within a kernel: (g)oihw by default, (g)ohwi for a channels-last weight.
memory::desc weight_desc(memory::data_type dt, int64_t groups, int64_t o, int64_t i, int64_t kh,
                         int64_t kw, int64_t o_stride, int64_t i_stride, int64_t g_stride,
                         int64_t kh_stride = -1, int64_t kw_stride = 1) {
  if (kh_stride < 0) kh_stride = kw;
  if (groups == 1)
    return memory::desc({o, i, kh, kw}, dt, dims{o_stride, i_stride, kh_stride, kw_stride});
  return memory::desc({groups, o, i, kh, kw}, dt,
                      dims{g_stride, o_stride, i_stride, kh_stride, kw_stride});
}

// The plain format of an activation [n, c, h, w]: NCHW, or NHWC for a channels-last tensor.
memory::desc activation_desc(const dims& d, memory::data_type dt, bool nhwc) {
  return memory::desc(d, dt, nhwc ? tag::nhwc : tag::nchw);
}

// Fills the reorders between the plain formats and the ones the primitive chose.
void plan_reorders(Entry& e, const memory::desc& src, const memory::desc& weights,
                   const memory::desc& dst) {
  e.src = src;
  e.weights = weights;
  e.dst = dst;
  if (e.src != e.user_src) e.src_in = reorder_step(e.user_src, e.src);
  if (e.weights != e.user_weights) e.weights_in = reorder_step(e.user_weights, e.weights);
  if (e.dst != e.user_dst) e.dst_out = reorder_step(e.dst, e.user_dst);
}

// conv2d's weight in oneDNN's order from xten's [o, c / groups, kh, kw]: (g)oihw, or the
// strides of `w` (contiguous or channels-last) where given.
memory::desc conv2d_weight_desc(const ConvGeometry& g, memory::data_type dt,
                                const Tensor& w = Tensor()) {
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  if (!w.defined() || w.is_contiguous())
    return weight_desc(dt, g.groups, og, cg, g.kh, g.kw, cg * g.kh * g.kw, g.kh * g.kw,
                       og * cg * g.kh * g.kw);
  return weight_desc(dt, g.groups, og, cg, g.kh, g.kw, w.stride(0), w.stride(1), og * w.stride(0),
                     w.stride(2), w.stride(3));
}

// The right/bottom padding that gives exactly (ho, wo) (as conv2d's floor division).
dims conv2d_pad_r(const ConvGeometry& g) {
  return {(g.ho - 1) * g.sh + (g.kh - 1) * g.dh + 1 - g.h - g.ph,
          (g.wo - 1) * g.sw + (g.kw - 1) * g.dw + 1 - g.w - g.pw};
}

double conv2d_flops(const ConvGeometry& g) {
  return 2.0 * static_cast<double>(g.n * g.o * g.ho * g.wo) *
         static_cast<double>(g.c / g.groups * g.kh * g.kw);
}

// conv2d forward over the formats oneDNN chooses ("any", unless a tag is given), with a float32
// bias if `bias`.
dnnl::convolution_forward::desc conv2d_forward_desc(const ConvGeometry& g, memory::data_type dt,
                                                    dnnl::prop_kind prop, bool bias,
                                                    tag src_tag = tag::any,
                                                    tag dst_tag = tag::any) {
  using F = dnnl::convolution_forward;
  const memory::desc any_src({g.n, g.c, g.h, g.w}, dt, src_tag);
  const memory::desc any_w(conv2d_weight_desc(g, dt).dims(), dt, tag::any);
  const memory::desc any_dst({g.n, g.o, g.ho, g.wo}, dt, dst_tag);
  const dims stride{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.ph, g.pw},
      pad_r = conv2d_pad_r(g);
  const auto alg = dnnl::algorithm::convolution_direct;
  if (!bias) return F::desc(prop, alg, any_src, any_w, any_dst, stride, dil, pad_l, pad_r);
  const memory::desc bias_md({g.o}, memory::data_type::f32, tag::x);
  return F::desc(prop, alg, any_src, any_w, bias_md, any_dst, stride, dil, pad_l, pad_r);
}

// Runs a step with its arguments and a scratchpad of its own.
void run(const Step& step, dnnl::stream& s, std::unordered_map<int, memory> args) {
  Tensor keep;
  if (step.scratchpad.get_size() > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD, scratch(step.scratchpad, keep));
  step.prim.execute(s, args);
  s.wait();  // the scratchpad goes back to the allocator on return
}

// Runs a convolution-like entry on the tensors' memory; `extra`: more arguments of the main
// primitive (an int8 convolution's zero points).
void run_conv(const Entry& e, const Tensor& x, const Tensor& w, const Tensor& bias,
              const Tensor& out, std::unordered_map<int, memory> extra = {},
              bool keep_packed_weights = false) {
  use_threads(e.threads);
  dnnl::stream s(engine());
  Tensor keep_src, keep_w, keep_dst;
  memory user_src(e.user_src, engine(), x.data_ptr());
  memory user_w(e.user_weights, engine(), w.data_ptr());
  memory user_dst(e.user_dst, engine(), out.data_ptr());
  memory src = user_src, wm = user_w, dst = user_dst;
  if (e.src_in) {
    src = scratch(e.src, keep_src);
    run(*e.src_in, s, {{DNNL_ARG_FROM, user_src}, {DNNL_ARG_TO, src}});
  }
  if (e.weights_in && keep_packed_weights) {  // Note [Packed int8 weights]
    std::lock_guard<std::mutex> lock(e.packed_mutex);
    auto it = std::find_if(e.packed.begin(), e.packed.end(), [&](const Entry::Packed& p) {
      return p.source.is_same(w) && p.version == w._version();
    });
    if (it == e.packed.end()) {
      wm = scratch(e.weights, keep_w);
      run(*e.weights_in, s, {{DNNL_ARG_FROM, user_w}, {DNNL_ARG_TO, wm}});
      e.packed.push_front({w, keep_w, w._version()});
      if (e.packed.size() > 2) e.packed.pop_back();
    } else {
      keep_w = it->packed;
      wm = memory(e.weights, engine(), keep_w.data_ptr());
    }
  } else if (e.weights_in) {
    wm = scratch(e.weights, keep_w);
    run(*e.weights_in, s, {{DNNL_ARG_FROM, user_w}, {DNNL_ARG_TO, wm}});
  }
  if (e.dst_out) dst = scratch(e.dst, keep_dst);
  std::unordered_map<int, memory> args{{e.src_arg, src}, {e.weights_arg, wm}, {e.dst_arg, dst}};
  args.insert(extra.begin(), extra.end());
  if (bias.defined())
    args.emplace(DNNL_ARG_BIAS, memory({{bias.numel()}, memory::data_type::f32, tag::x}, engine(),
                                       bias.data_ptr()));
  run(e.main, s, std::move(args));
  if (e.dst_out) run(*e.dst_out, s, {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, user_dst}});
}

// out = a @ b (+ bias), batched [B, n, k] @ [B, k, m]: one matmul primitive, which adds the
// bias (docs/cpu_kernels.md, "Fused post-ops").
bool matmul_bias(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out) {
  const auto dt = data_type(a.dtype());
  if (!dt || a.numel() == 0 || b.numel() == 0) return false;
  const std::string key =
      fmt::format("matmul {} {} {} {} {} {}{}", static_cast<int>(a.dtype()), a.sizes(), a.strides(),
                  b.sizes(), b.strides(), out.sizes(), bias.defined() ? " bias" : "");
  const double flops = 2.0 * static_cast<double>(out.numel()) * static_cast<double>(a.size(2));
  auto e = cache().get(key, flops, [&](Entry& en) {
    const memory::desc am(dims(a.sizes().begin(), a.sizes().end()), *dt, strides_of(a));
    const memory::desc bm(dims(b.sizes().begin(), b.sizes().end()), *dt, strides_of(b));
    const memory::desc cm(dims(out.sizes().begin(), out.sizes().end()), *dt, tag::abc);
    const dnnl::matmul::desc d =
        bias.defined()
            ? dnnl::matmul::desc(
                  am, bm, memory::desc({1, 1, out.size(2)}, *data_type(bias.dtype()), tag::abc), cm)
            : dnnl::matmul::desc(am, bm, cm);
    en.main = step_of<dnnl::matmul>(dnnl::matmul::primitive_desc(d, user_scratchpad(), engine()));
    en.user_src = am;
    en.user_weights = bm;
    en.user_dst = cm;
  });
  if (!e->ok) return false;
  use_threads(e->threads);
  dnnl::stream s(engine());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(e->user_src, engine(), a.data_ptr())},
      {DNNL_ARG_WEIGHTS, memory(e->user_weights, engine(), b.data_ptr())},
      {DNNL_ARG_DST, memory(e->user_dst, engine(), out.data_ptr())}};
  if (bias.defined())
    args.emplace(DNNL_ARG_BIAS, memory({{1, 1, out.size(2)}, *data_type(bias.dtype()), tag::abc},
                                       engine(), bias.data_ptr()));
  run(e->main, s, std::move(args));
  return true;
}

// rows x cols of a row-major output with leading dimension ld: + bias[j], then relu.
void bias_relu(float* c, int64_t ld, int64_t rows, int64_t cols, const float* bias, bool relu) {
  if (!bias && !relu) return;
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ld;
    for (int64_t j = 0; j < cols; ++j) {
      const float v = bias ? row[j] + bias[j] : row[j];
      row[j] = relu && v < 0 ? 0.0f : v;  // relu keeps NaN
    }
  }
}

// Note [sgemm on one thread]: a float32 product that runs on one thread goes to oneDNN's
// dnnl_sgemm rather than its matmul primitive when it is large or small:
// - Large (every dimension at least kSgemmMinDim, one thread: set_num_threads(1), or inside a
//   parallel region). Measured on the 16-core host at 1 thread, 1024^2 and 2048^2: sgemm
//   107-124 GFLOP/s, the matmul primitive 90-113 (7 of 8 runs in sgemm's favour; a second
//   experiment on another day read 108-139 vs 99-112 at 2048); at 16 threads neither led, and
//   for the MLP's 64-row products sgemm was slower.
// - Small (under kParallelFlops, which the primitive runs on one thread too, Note [oneDNN
//   threads]): the primitive's per-call cost (the cache key's formatting and look-up, memory
//   objects, a stream) was about half the time of the MLP's three small products (bench/README.md,
//   "Small products through sgemm").
// The bias and the relu follow as one pass over the output.
constexpr int64_t kSgemmMinDim = 512;

// A row- or column-major matrix [1, r, c] as sgemm's (trans, leading dimension); nullopt for
// other strides.
std::optional<std::pair<char, int64_t>> sgemm_layout(const Tensor& t) {
  if (t.stride(2) == 1 && t.stride(1) >= t.size(2)) return std::make_pair('N', t.stride(1));
  if (t.stride(1) == 1 && t.stride(2) >= t.size(1)) return std::make_pair('T', t.stride(2));
  return std::nullopt;
}

bool sgemm(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu, const Tensor& out) {
  if (a.dtype() != kFloat || a.size(0) != 1 ||
      (bias.defined() && (bias.dtype() != kFloat || !bias.is_contiguous())))
    return false;
  const int64_t n = a.size(1), k = a.size(2), m = b.size(2);
  if (n == 0 || k == 0 || m == 0) return false;
  const bool small = 2.0 * static_cast<double>(n * k * m) < kParallelFlops;
  const bool large =
      std::min({n, k, m}) >= kSgemmMinDim && (get_num_threads() == 1 || omp_in_parallel());
  if (!small && !large) return false;
  const auto la = sgemm_layout(a), lb = sgemm_layout(b);
  if (!la || !lb) return false;
  const auto [ta, lda] = *la;
  const auto [tb, ldb] = *lb;
  use_threads(1);
  cap_isa_once();
  float* c = static_cast<float*>(out.data_ptr());
  if (dnnl_sgemm(ta, tb, n, m, k, 1.0f, static_cast<const float*>(a.data_ptr()), lda,
                 static_cast<const float*>(b.data_ptr()), ldb, 0.0f, c, m) != dnnl_success)
    return false;
  bias_relu(c, m, n, m, bias.defined() ? static_cast<const float*>(bias.data_ptr()) : nullptr,
            relu);
  count_cpu_gemm_sgemm();
  return true;
}

// Note [Rows to threads] (core/parallel.cpp) for products: a float32 product on a team whose
// largest operand is a matrix that the team's other kernels cut by rows (a weight, read as the
// column-major b of x @ w^T, or a weight gradient written as out) is cut the same way: thread
// t computes the output's rows or columns that belong to its owned_rows of that operand, with
// a one-thread dnnl_sgemm, and adds the bias and applies the relu to them while they are in
// its cache. The operand every thread reads whole must be small (kSharedMaxBytes), and each
// thread gets at least kMinRowsPerThread rows; otherwise oneDNN splits the work itself.
constexpr int64_t kMinRowsPerThread = 16;
constexpr int64_t kSharedMaxBytes = int64_t{1} << 20;

bool product_by_owned_rows(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu,
                           const Tensor& out) {
  const int team = get_num_threads();
  if (!owned_rows_enabled() || a.dtype() != kFloat || a.size(0) != 1 || team == 1 ||
      omp_in_parallel())
    return false;
  const int64_t n = a.size(1), k = a.size(2), m = b.size(2);
  if (2.0 * static_cast<double>(n * k * m) < kParallelFlops) return false;
  const auto la = sgemm_layout(a), lb = sgemm_layout(b);
  if (!la || !lb) return false;
  const auto [ta, lda] = *la;
  const auto [tb, ldb] = *lb;
  // Cut the output's rows (out, or a row-major a, is the largest) or its columns (a
  // column-major b, whose columns are its rows in memory, is the largest).
  const int64_t sa = n * k, sb = k * m, sc = n * m;
  bool by_rows;
  if (sc >= sa && sc >= sb)
    by_rows = true;
  else if (sb >= sa && tb == 'T')
    by_rows = false;
  else if (sa > sb && ta == 'N')
    by_rows = true;
  else
    return false;
  const int64_t cut = by_rows ? n : m, shared = by_rows ? sb : sa;
  if (cut < kMinRowsPerThread * team || shared * 4 > kSharedMaxBytes) return false;
  const float* pa = static_cast<const float*>(a.data_ptr());
  const float* pb = static_cast<const float*>(b.data_ptr());
  const float* pbias = bias.defined() ? static_cast<const float*>(bias.data_ptr()) : nullptr;
  float* pc = static_cast<float*>(out.data_ptr());
  std::atomic<bool> ok{true};
  parallel_on_team([&](int t, int threads) {
    const RowRange r = owned_rows(cut, t, threads);
    if (r.begin == r.end) return;
    // Element (i, j) of a row-major matrix with leading dimension ld is p[i * ld + j], of a
    // column-major one p[j * ld + i].
    const int64_t rows = by_rows ? r.end - r.begin : n, cols = by_rows ? m : r.end - r.begin;
    const float* a0 = by_rows ? pa + r.begin * (ta == 'N' ? lda : 1) : pa;
    const float* b0 = by_rows ? pb : pb + r.begin * (tb == 'N' ? 1 : ldb);
    float* c0 = by_rows ? pc + r.begin * m : pc + r.begin;
    if (dnnl_sgemm(ta, tb, rows, cols, k, 1.0f, a0, lda, b0, ldb, 0.0f, c0, m) != dnnl_success) {
      ok = false;
      return;
    }
    bias_relu(c0, m, rows, cols, pbias ? pbias + (by_rows ? 0 : r.begin) : nullptr, relu);
  });
  if (ok) count_cpu_gemm_owned_rows();
  return ok;
}

}  // namespace

bool matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  return sgemm(a, b, Tensor(), false, out) || product_by_owned_rows(a, b, Tensor(), false, out) ||
         matmul_bias(a, b, Tensor(), out);
}

// Whether dnnl_sgemm computes here. Where a program also puts libtorch into its global symbol
// scope, symbols libtorch exports can take the place of oneDNN's own inside oneDNN, and
// dnnl_sgemm then answered dnnl_unimplemented (bench/reference/interleaved.h).
bool sgemm_available() {
  static const bool ok = [] {
    cap_isa_once();
    const float a = 2, b = 3;
    float c = 0;
    return dnnl_sgemm('N', 'N', 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1) == dnnl_success && c == 6;
  }();
  return ok;
}

// float32 tiles go to dnnl_sgemm (no primitive per shape: Note [sgemm on one thread]), the
// others to a one-thread matmul primitive.
struct TileProduct::Impl {
  std::shared_ptr<const Entry> e;
  char ta = 'N', tb = 'N';
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  float beta = 0;
};

TileProduct TileProduct::make(ScalarType dtype, int64_t m, int64_t n, int64_t k,
                              std::array<int64_t, 2> a_strides, std::array<int64_t, 2> b_strides,
                              int64_t ldc, bool accumulate) {
  TileProduct p;
  const auto dt = data_type(dtype);
  if (!dt || m <= 0 || n <= 0 || k <= 0) return p;
  if (dtype == kFloat) {
    // sgemm's layouts: rows contiguous ('N', leading dimension the row stride) or columns.
    auto layout = [](std::array<int64_t, 2> s) -> std::optional<std::pair<char, int64_t>> {
      if (s[1] == 1) return std::make_pair('N', s[0]);
      if (s[0] == 1) return std::make_pair('T', s[1]);
      return std::nullopt;
    };
    const auto la = layout(a_strides), lb = layout(b_strides);
    if (!la || !lb || !sgemm_available()) return p;
    use_threads(1);
    p.impl_ = std::make_shared<const Impl>(Impl{nullptr, la->first, lb->first, m, n, k, la->second,
                                                lb->second, ldc, accumulate ? 1.0f : 0.0f});
    return p;
  }
  const std::string key =
      fmt::format("tile {} {} {} {} {} {} {} {} {} {}", static_cast<int>(dtype), m, n, k,
                  a_strides[0], a_strides[1], b_strides[0], b_strides[1], ldc, accumulate);
  // Built for one thread (flops 0): the products run inside the caller's tasks.
  auto e = cache().get(key, 0.0, [&](Entry& en) {
    const memory::desc am({m, k}, *dt, {a_strides[0], a_strides[1]});
    const memory::desc bm({k, n}, *dt, {b_strides[0], b_strides[1]});
    const memory::desc cm({m, n}, memory::data_type::f32, {ldc, 1});
    dnnl::primitive_attr attr = user_scratchpad();
    if (accumulate) {
      dnnl::post_ops po;
      po.append_sum(1.0f);
      attr.set_post_ops(po);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(am, bm, cm), attr, engine());
    // The reference implementation would be far slower than widening to float.
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
      throw dnnl::error(dnnl_unimplemented, "reference matmul");
    en.main = step_of<dnnl::matmul>(pd);
    en.user_src = am;
    en.user_weights = bm;
    en.user_dst = cm;
  });
  if (e->ok) p.impl_ = std::make_shared<const Impl>(Impl{e});
  return p;
}

namespace {

// What a thread keeps for the tile products it runs (Note [Tile products]): a stream, one
// scratchpad, and the memory objects of the entries it ran last, so that a product is one
// execute with its pointers set. Run through the objects of each call instead (a stream, three
// memory objects, an argument map and a scratchpad allocated per product), a bfloat16 tile cost
// about 2.5 us more on the VM (AVX512-BF16, one thread: 64 x 64 x 64 5.5 -> 3.0 us, 16 x 16 x 16
// 2.9 -> 0.4 us; attention [4, 8, 512, 64] causal 11.8 -> 10.3 ms).
// Each slot holds its entry, so an entry dropped from the primitive cache is not reused by
// address while a slot still names it.
class TileThreadState {
 public:
  void run(const std::shared_ptr<const Entry>& e, const void* a, const void* b, float* c) {
    Slot& slot = slot_of(e);
    slot.a.set_data_handle(const_cast<void*>(a));
    slot.b.set_data_handle(const_cast<void*>(b));
    slot.c.set_data_handle(c);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, slot.a.get()},
                               {DNNL_ARG_WEIGHTS, slot.b.get()},
                               {DNNL_ARG_DST, slot.c.get()},
                               {DNNL_ARG_SCRATCHPAD, nullptr}};
    int nargs = 3;
    if (slot.scratch_size > 0) {
      if (scratch_.size() < slot.scratch_size + kAlign) scratch_.resize(slot.scratch_size + kAlign);
      const uintptr_t at = reinterpret_cast<uintptr_t>(scratch_.data());
      slot.sp.set_data_handle(scratch_.data() + (kAlign - at % kAlign));
      args[nargs++].memory = slot.sp.get();
    }
    const dnnl_status_t st = dnnl_primitive_execute(e->main.prim.get(), stream_.get(), nargs, args);
    XTEN_ASSERT(st == dnnl_success, "oneDNN tile product failed ({})", static_cast<int>(st));
    stream_.wait();
  }

 private:
  static constexpr size_t kAlign = 64;
  struct Slot {
    std::shared_ptr<const Entry> e;
    memory a, b, c, sp;  // sp only where the primitive has a scratchpad
    size_t scratch_size = 0;
  };
  Slot& slot_of(const std::shared_ptr<const Entry>& e) {
    for (Slot& s : slots_)
      if (s.e == e) return s;
    Slot& s = slots_[next_];
    next_ = (next_ + 1) % slots_.size();
    s.e = e;
    s.a = memory(e->user_src, engine(), DNNL_MEMORY_NONE);
    s.b = memory(e->user_weights, engine(), DNNL_MEMORY_NONE);
    s.c = memory(e->user_dst, engine(), DNNL_MEMORY_NONE);
    s.scratch_size = e->main.scratchpad.get_size();
    s.sp = s.scratch_size > 0 ? memory(e->main.scratchpad, engine(), DNNL_MEMORY_NONE) : memory();
    return s;
  }
  std::array<Slot, 16> slots_;  // attention's backward runs five products for each tile shape
  size_t next_ = 0;
  dnnl::stream stream_{engine()};
  std::vector<char> scratch_;
};

}  // namespace

void TileProduct::run(const void* a, const void* b, float* c) const {
  const Impl& t = *impl_;
  if (!t.e) {
    const dnnl_status_t st =
        dnnl_sgemm(t.ta, t.tb, t.m, t.n, t.k, 1.0f, static_cast<const float*>(a), t.lda,
                   static_cast<const float*>(b), t.ldb, t.beta, c, t.ldc);
    XTEN_ASSERT(st == dnnl_success, "dnnl_sgemm failed ({})", static_cast<int>(st));
    return;
  }
  thread_local TileThreadState state;
  state.run(t.e, a, b, c);
}

bool linear(const Tensor& x, const Tensor& w, const Tensor& bias, bool relu, const Tensor& out) {
  const Tensor a = x.unsqueeze(0), b = w.t().unsqueeze(0);
  Tensor c = out.unsqueeze(0);
  if (sgemm(a, b, bias, relu, c) || product_by_owned_rows(a, b, bias, relu, c)) return true;
  if (!matmul_bias(a, b, bias, c)) return false;
  if (relu) relu_(c);
  return true;
}

bool conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvGeometry& g,
            const Tensor& out, bool nhwc) {
  const auto dt = data_type(x.dtype());
  if (!dt || x.numel() == 0 || out.numel() == 0) return false;
  const std::string key = fmt::format("conv {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
                                      static_cast<int>(x.dtype()), g.n, g.c, g.h, g.w, g.o, g.kh,
                                      g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups) +
                          (bias.defined() ? " bias" : "") + (nhwc ? " nhwc" : "") +
                          (w.is_contiguous() ? "" : " ohwi");
  auto e = cache().get(key, conv2d_flops(g), [&](Entry& en) {
    en.user_src = activation_desc({g.n, g.c, g.h, g.w}, *dt, nhwc);
    en.user_weights = conv2d_weight_desc(g, *dt, w);
    en.user_dst = activation_desc({g.n, g.o, g.ho, g.wo}, *dt, nhwc);
    // Channels-last activations stay NHWC inside the primitive too: no reorder either side.
    const tag act = nhwc ? tag::nhwc : tag::any;
    using F = dnnl::convolution_forward;
    const F::primitive_desc pd(
        conv2d_forward_desc(g, *dt, dnnl::prop_kind::forward_training, bias.defined(), act, act),
        user_scratchpad(), engine());
    en.main = step_of<F>(pd);
    plan_reorders(en, pd.src_desc(), pd.weights_desc(), pd.dst_desc());
  });
  if (!e->ok) return false;
  run_conv(*e, x, w, bias, out);
  return true;
}

bool conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvGeometry& g,
                      IntArrayRef output_padding, const Tensor& out, bool nhwc) {
  const auto dt = data_type(x.dtype());
  if (!dt || x.numel() == 0 || out.numel() == 0) return false;
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const std::string key =
      fmt::format("deconv {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
                  static_cast<int>(x.dtype()), g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.sh, g.sw,
                  g.ph, g.pw, g.dh, g.dw, g.groups, output_padding) +
      (bias.defined() ? " bias" : "") + (nhwc ? " nhwc" : "") +
      fmt::format(" w {}", w.strides());
  const double flops =
      2.0 * static_cast<double>(g.n * g.o * g.ho * g.wo) * static_cast<double>(cg * g.kh * g.kw);
  auto e = cache().get(key, flops, [&](Entry& en) {
    en.user_src = activation_desc({g.n, g.c, g.h, g.w}, *dt, nhwc);
    // xten's weight is [c, o / groups, kh, kw] (contiguous or channels-last, a conv2d weight read
    // for its input gradient): oneDNN's (g, o, i, kh, kw) reads it through its strides.
    en.user_weights = weight_desc(*dt, g.groups, og, cg, g.kh, g.kw, w.stride(1), w.stride(0),
                                  cg * w.stride(0), w.stride(2), w.stride(3));
    en.user_dst = activation_desc({g.n, g.o, g.ho, g.wo}, *dt, nhwc);
    const tag act = nhwc ? tag::nhwc : tag::any;
    const memory::desc any_src({g.n, g.c, g.h, g.w}, *dt, act);
    const memory::desc any_w(en.user_weights.dims(), *dt, tag::any);
    const memory::desc any_dst({g.n, g.o, g.ho, g.wo}, *dt, act);
    const memory::desc bias_md({g.o}, memory::data_type::f32, tag::x);
    const dims stride{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.ph, g.pw};
    const dims pad_r{g.ph - output_padding[0], g.pw - output_padding[1]};
    using D = dnnl::deconvolution_forward;
    const D::desc d =
        bias.defined()
            ? D::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::deconvolution_direct,
                      any_src, any_w, bias_md, any_dst, stride, dil, pad_l, pad_r)
            : D::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::deconvolution_direct,
                      any_src, any_w, any_dst, stride, dil, pad_l, pad_r);
    const D::primitive_desc pd(d, user_scratchpad(), engine());
    en.main = step_of<D>(pd);
    plan_reorders(en, pd.src_desc(), pd.weights_desc(), pd.dst_desc());
  });
  if (!e->ok) return false;
  run_conv(*e, x, w, bias, out);
  return true;
}

bool conv2d_backward_weight(const Tensor& grad_output, const Tensor& x, const ConvGeometry& g,
                            const Tensor& grad_weight, bool nhwc) {
  const auto dt = data_type(x.dtype());
  if (!dt || x.numel() == 0 || grad_output.numel() == 0) return false;
  const std::string key = fmt::format("conv_bw {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
                                      static_cast<int>(x.dtype()), g.n, g.c, g.h, g.w, g.o, g.kh,
                                      g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups) +
                          (nhwc ? " nhwc" : "") + (grad_weight.is_contiguous() ? "" : " ohwi");
  auto e = cache().get(key, conv2d_flops(g), [&](Entry& en) {
    // Roles: src = the input, weights = the output's gradient, dst = the weight's gradient.
    en.user_src = activation_desc({g.n, g.c, g.h, g.w}, *dt, nhwc);
    en.user_weights = activation_desc({g.n, g.o, g.ho, g.wo}, *dt, nhwc);
    en.user_dst = conv2d_weight_desc(g, *dt, grad_weight);
    en.weights_arg = DNNL_ARG_DIFF_DST;
    en.dst_arg = DNNL_ARG_DIFF_WEIGHTS;
    const tag act = nhwc ? tag::nhwc : tag::any;
    const memory::desc any_src({g.n, g.c, g.h, g.w}, *dt, act);
    const memory::desc any_w(en.user_dst.dims(), *dt, tag::any);
    const memory::desc any_dst({g.n, g.o, g.ho, g.wo}, *dt, act);
    const dims stride{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.ph, g.pw},
        pad_r = conv2d_pad_r(g);
    using F = dnnl::convolution_forward;
    using B = dnnl::convolution_backward_weights;
    const F::primitive_desc hint(
        conv2d_forward_desc(g, *dt, dnnl::prop_kind::forward_training, false, act, act), engine());
    const B::primitive_desc pd(B::desc(dnnl::algorithm::convolution_direct, any_src, any_w, any_dst,
                                       stride, dil, pad_l, pad_r),
                               user_scratchpad(), engine(), hint);
    en.main = step_of<B>(pd);
    plan_reorders(en, pd.src_desc(), pd.diff_dst_desc(), pd.diff_weights_desc());
  });
  if (!e->ok) return false;
  run_conv(*e, x, grad_output, Tensor(), grad_weight);
  return true;
}

// ---- int8 (docs/quantization.md, "Kernels") --------------------------------------------------

namespace {

// oneDNN's type for a quantized tensor's integers (or float32 for a float output).
memory::data_type int8_data_type(ScalarType t) {
  switch (t) {
    case kQUInt8:
      return memory::data_type::u8;
    case kQInt8:
      return memory::data_type::s8;
    case kQInt32:
      return memory::data_type::s32;
    default:
      return memory::data_type::f32;
  }
}

// Output scales (one, or one per output channel: dim 1 of the output for both primitives), zero
// points of source and destination given at run time (oneDNN 2.6's primitives take no others),
// and relu as a post-op: relu acts on the scaled value, before the output zero point is added.
dnnl::primitive_attr int8_attr(const std::vector<float>& scales, bool relu, bool dst_zero_point) {
  dnnl::primitive_attr attr = user_scratchpad();
  attr.set_output_scales(scales.size() > 1 ? 1 << 1 : 0, scales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (dst_zero_point) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  if (relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  return attr;
}

// The zero points' arguments (the int32 values must outlive the call); a float32 output has
// none.
std::unordered_map<int, memory> zero_point_args(int32_t* src_zp, int32_t* dst_zp,
                                                const Tensor& out) {
  const memory::desc one({1}, memory::data_type::s32, tag::x);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory(one, engine(), src_zp)}};
  if (out.is_quantized())
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, memory(one, engine(), dst_zp));
  return args;
}

// The scales are part of the primitive (oneDNN's fastest int8 kernels take them when built):
// the cache key carries them.
std::string int8_key(const std::vector<float>& scales, bool relu) {
  const std::string bytes(reinterpret_cast<const char*>(scales.data()),
                          scales.size() * sizeof(float));
  return fmt::format(" scales {}:{:x}{}", scales.size(), std::hash<std::string>{}(bytes),
                     relu ? " relu" : "");
}

}  // namespace

bool quantized_conv2d(const Tensor& x, int32_t x_zero_point, const Tensor& w, const Tensor& bias,
                      const std::vector<float>& scales, int32_t out_zero_point, bool relu,
                      const ConvGeometry& g, const Tensor& out, bool nhwc) {
  if (x.numel() == 0 || out.numel() == 0) return false;
  const auto xdt = int8_data_type(x.dtype()), odt = int8_data_type(out.dtype());
  const auto s8 = memory::data_type::s8;
  const std::string key =
      fmt::format("qconv {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
                  static_cast<int>(x.dtype()), static_cast<int>(out.dtype()), g.n, g.c, g.h, g.w,
                  g.o, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups) +
      int8_key(scales, relu) + (bias.defined() ? " bias" : "") + (nhwc ? " nhwc" : "") +
      (w.is_contiguous() ? "" : " ohwi");
  auto e = cache().get(key, conv2d_flops(g), [&](Entry& en) {
    en.user_src = activation_desc({g.n, g.c, g.h, g.w}, xdt, nhwc);
    en.user_weights = conv2d_weight_desc(g, s8, w);
    en.user_dst = activation_desc({g.n, g.o, g.ho, g.wo}, odt, nhwc);
    const tag act = nhwc ? tag::nhwc : tag::any;
    const memory::desc any_src({g.n, g.c, g.h, g.w}, xdt, act);
    const memory::desc any_w(en.user_weights.dims(), s8, tag::any);
    const memory::desc any_dst({g.n, g.o, g.ho, g.wo}, odt, act);
    const memory::desc bias_md({g.o}, memory::data_type::f32, tag::x);
    const dims stride{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.ph, g.pw},
        pad_r = conv2d_pad_r(g);
    using F = dnnl::convolution_forward;
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    const F::desc d =
        bias.defined()
            ? F::desc(prop, alg, any_src, any_w, bias_md, any_dst, stride, dil, pad_l, pad_r)
            : F::desc(prop, alg, any_src, any_w, any_dst, stride, dil, pad_l, pad_r);
    const F::primitive_desc pd(d, int8_attr(scales, relu, out.is_quantized()), engine());
    en.main = step_of<F>(pd);
    plan_reorders(en, pd.src_desc(), pd.weights_desc(), pd.dst_desc());
  });
  if (!e->ok) return false;
  int32_t src_zp = x_zero_point, dst_zp = out_zero_point;
  run_conv(*e, x, w, bias, out, zero_point_args(&src_zp, &dst_zp, out), true);
  return true;
}

bool quantized_linear(const Tensor& x, int32_t x_zero_point, const Tensor& w, const Tensor& bias,
                      const std::vector<float>& scales, int32_t out_zero_point, bool relu,
                      const Tensor& out) {
  if (x.numel() == 0 || out.numel() == 0) return false;
  const int64_t n = x.size(0), k = x.size(1), o = w.size(0);
  const auto xdt = int8_data_type(x.dtype()), odt = int8_data_type(out.dtype());
  const std::string key =
      fmt::format("qlinear {} {} {} {} {} {} {}", static_cast<int>(x.dtype()),
                  static_cast<int>(out.dtype()), n, k, o, x.strides(), w.strides()) +
      int8_key(scales, relu) + (bias.defined() ? " bias" : "");
  const double flops = 2.0 * static_cast<double>(n * k * o);
  auto e = cache().get(key, flops, [&](Entry& en) {
    en.user_src = memory::desc({n, k}, xdt, strides_of(x));
    // The weight [o, k] read as the product's [k, o].
    en.user_weights = memory::desc({k, o}, memory::data_type::s8, dims{w.stride(1), w.stride(0)});
    en.user_dst = memory::desc({n, o}, odt, tag::ab);
    const dnnl::matmul::desc d =
        bias.defined()
            ? dnnl::matmul::desc(en.user_src, en.user_weights,
                                 memory::desc({1, o}, memory::data_type::f32, tag::ab), en.user_dst)
            : dnnl::matmul::desc(en.user_src, en.user_weights, en.user_dst);
    const dnnl::matmul::primitive_desc pd(d, int8_attr(scales, relu, out.is_quantized()), engine());
    en.main = step_of<dnnl::matmul>(pd);
    plan_reorders(en, pd.src_desc(), pd.weights_desc(), pd.dst_desc());
  });
  if (!e->ok) return false;
  int32_t src_zp = x_zero_point, dst_zp = out_zero_point;
  run_conv(*e, x, w, bias, out, zero_point_args(&src_zp, &dst_zp, out), true);
  return true;
}

// ---- convolutions of compiled inference graphs ------------------------------------------------

struct InferenceStep::Impl {
  ConvGeometry g;
  bool pool = false;  // a max pooling (no weights)
  Step main;
  memory::desc src, weights_md, dst;  // the primitive's formats
  memory::desc plain_dst;             // contiguous NCHW
  Tensor weights, bias;               // in the primitive's formats (bias float32)
  bool sum = false, relu = false;
  int threads = 1;
  ScalarType dtype = kFloat;
  // Reorders between formats, made on first use.
  mutable std::mutex mu;
  mutable std::list<std::pair<std::pair<memory::desc, memory::desc>, Step>> reorders;

  const Step& reorder(const memory::desc& from, const memory::desc& to) const {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [key, step] : reorders)
      if (key.first == from && key.second == to) return step;
    reorders.emplace_back(std::make_pair(from, to), reorder_step(from, to));
    return reorders.back().second;
  }
  // `t` (plain, or blocked in `from`'s dst format) as memory.
  memory of(const Tensor& t, const InferenceStep::Impl* from) const {
    return memory(from ? from->dst : plain_of(t), engine(), t.data_ptr());
  }
  // Writes `in` into `out` in out's format: a copy where the formats agree, else a reorder.
  void convert(const memory& in, const memory& out, dnnl::stream& s) const {
    const memory::desc have = in.get_desc(), want = out.get_desc();
    if (have == want)
      std::memcpy(out.get_data_handle(), in.get_data_handle(), have.get_size());
    else
      onednn::run(reorder(have, want), s, {{DNNL_ARG_FROM, in}, {DNNL_ARG_TO, out}});
  }
  // `t` as memory in the format `want`: in place where the formats agree, else converted into
  // `keep`.
  memory as(const Tensor& t, const InferenceStep::Impl* from, const memory::desc& want,
            dnnl::stream& s, Tensor& keep) const {
    memory m = of(t, from);
    if (m.get_desc() == want) return m;
    memory out = scratch(want, keep);
    convert(m, out, s);
    return out;
  }
  memory::desc plain_of(const Tensor& t) const {
    return memory::desc(dims(t.sizes().begin(), t.sizes().end()), *data_type(dtype), tag::nchw);
  }
};

std::shared_ptr<const InferenceStep> InferenceStep::make(const ConvGeometry& g, ScalarType dtype,
                                                         const Tensor& weight, const Tensor& bias,
                                                         bool sum, bool relu) {
  const auto dt = data_type(dtype);
  if (!dt || dtype == kHalf || cpu_gemm() != CpuGemm::OneDnn || g.n * g.c * g.h * g.w == 0 ||
      g.n * g.o * g.ho * g.wo == 0)
    return nullptr;
  auto impl = std::make_shared<Impl>();
  Impl& e = *impl;
  e.g = g;
  e.sum = sum;
  e.relu = relu;
  e.dtype = dtype;
  e.threads = threads_for(conv2d_flops(g));
  use_threads(e.threads);
  try {
    e.plain_dst = memory::desc({g.n, g.o, g.ho, g.wo}, *dt, tag::nchw);
    const memory::desc plain_w = conv2d_weight_desc(g, *dt);
    using F = dnnl::convolution_forward;
    const F::desc d =
        conv2d_forward_desc(g, *dt, dnnl::prop_kind::forward_inference, bias.defined());
    dnnl::primitive_attr attr = user_scratchpad();
    dnnl::post_ops ops;
    if (sum) ops.append_sum(1.0f);
    if (relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
    F::primitive_desc pd(d, attr, engine());
    // Note [Blocked over NHWC]: for float32 on AVX-512, oneDNN 2.6 given `any` picks NHWC
    // (its brgemm kernel); asked for nChw16c it runs its direct kernel, which on the benchmark
    // host took ResNet-18's convolutions from 188 to 167 ms at one thread and was even at 16
    // (bench/README.md, "Convolution layouts"). So a float32 step that got NHWC asks again for
    // the blocked layout (the input left to oneDNN where its channels are not a multiple of 16,
    // as the first convolution's 3), and keeps NHWC where oneDNN declines.
    const memory::desc nhwc_dst({g.n, g.o, g.ho, g.wo}, *dt, tag::nhwc);
    if (dtype == kFloat && pd.dst_desc() == nhwc_dst &&
        dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core) {
      try {
        pd = F::primitive_desc(
            conv2d_forward_desc(g, *dt, dnnl::prop_kind::forward_inference, bias.defined(),
                                g.c % 16 ? tag::any : tag::nChw16c, tag::nChw16c),
            attr, engine());
      } catch (const dnnl::error&) {
      }
    }
    e.main = step_of<F>(pd);
    e.src = pd.src_desc();
    e.weights_md = pd.weights_desc();
    e.dst = pd.dst_desc();
    // The weights (and bias) once, in the primitive's format.
    dnnl::stream s(engine());
    const Tensor w = weight.to(dtype).contiguous();
    memory user_w(plain_w, engine(), w.data_ptr());
    memory packed = scratch(pd.weights_desc(), e.weights);
    if (pd.weights_desc() == plain_w)
      std::memcpy(packed.get_data_handle(), w.data_ptr(), plain_w.get_size());
    else
      onednn::run(reorder_step(plain_w, pd.weights_desc()), s,
                  {{DNNL_ARG_FROM, user_w}, {DNNL_ARG_TO, packed}});
    if (bias.defined()) e.bias = bias.to(kFloat).contiguous().clone();
  } catch (const dnnl::error&) {
    return nullptr;
  }
  auto out = std::shared_ptr<InferenceStep>(new InferenceStep());
  out->impl_ = std::move(impl);
  return out;
}

Tensor InferenceStep::run(const Tensor& src, const InferenceStep* src_from, const Tensor& other,
                          const InferenceStep* other_from, bool blocked_out) const {
  const Impl& e = *impl_;
  use_threads(e.threads);
  dnnl::stream s(engine());
  Tensor keep_src, keep_dst;
  const Tensor x = src_from ? src : src.contiguous();
  memory src_m = e.as(x, src_from ? src_from->impl_.get() : nullptr, e.src, s, keep_src);
  // The output: blocked, or plain (directly where the primitive writes NCHW itself).
  const bool direct = !blocked_out && e.dst == e.plain_dst;
  Tensor result = blocked_out || !direct
                      ? empty_tensor({static_cast<int64_t>(e.dst.get_size())}, kByte, Device("cpu"))
                      : empty_tensor({e.g.n, e.g.o, e.g.ho, e.g.wo}, e.dtype, Device("cpu"));
  memory dst_m(e.dst, engine(), result.data_ptr());
  if (e.sum) {
    // The residual operand goes into the output buffer first, in the output's format.
    const Tensor o = other_from ? other : other.contiguous();
    e.convert(e.of(o, other_from ? other_from->impl_.get() : nullptr), dst_m, s);
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_m}, {DNNL_ARG_DST, dst_m}};
  if (!e.pool) args.emplace(DNNL_ARG_WEIGHTS, memory(e.weights_md, engine(), e.weights.data_ptr()));
  if (e.bias.defined())
    args.emplace(DNNL_ARG_BIAS,
                 memory({{e.g.o}, memory::data_type::f32, tag::x}, engine(), e.bias.data_ptr()));
  onednn::run(e.main, s, std::move(args));
  if (blocked_out || direct) return result;
  Tensor plain = empty_tensor({e.g.n, e.g.o, e.g.ho, e.g.wo}, e.dtype, Device("cpu"));
  e.convert(dst_m, memory(e.plain_dst, engine(), plain.data_ptr()), s);
  return plain;
}

std::shared_ptr<const InferenceStep> InferenceStep::max_pool(const ConvGeometry& g,
                                                             ScalarType dtype,
                                                             const InferenceStep* src_from) {
  const auto dt = data_type(dtype);
  if (!dt || dtype == kHalf || cpu_gemm() != CpuGemm::OneDnn || g.dh != 1 || g.dw != 1 ||
      g.n * g.c * g.h * g.w == 0 || g.n * g.c * g.ho * g.wo == 0)
    return nullptr;
  auto impl = std::make_shared<Impl>();
  Impl& e = *impl;
  e.g = g;
  e.g.o = g.c;
  e.pool = true;
  e.dtype = dtype;
  e.threads = get_num_threads();  // memory-bound: the whole team
  use_threads(e.threads);
  try {
    e.plain_dst = memory::desc({g.n, g.c, g.ho, g.wo}, *dt, tag::nchw);
    const memory::desc src =
        src_from ? src_from->impl_->dst : memory::desc({g.n, g.c, g.h, g.w}, *dt, tag::nchw);
    const memory::desc dst({g.n, g.c, g.ho, g.wo}, *dt, tag::any);
    using P = dnnl::pooling_forward;
    const P::primitive_desc pd(
        P::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, src, dst,
                {g.sh, g.sw}, {g.kh, g.kw}, {g.ph, g.pw}, conv2d_pad_r(e.g)),
        user_scratchpad(), engine());
    e.main = step_of<P>(pd);
    e.src = pd.src_desc();
    e.dst = pd.dst_desc();
  } catch (const dnnl::error&) {
    return nullptr;
  }
  auto out = std::shared_ptr<InferenceStep>(new InferenceStep());
  out->impl_ = std::move(impl);
  return out;
}

std::string InferenceStep::describe() const {
  const Impl& e = *impl_;
  if (e.pool)
    return fmt::format("onednn max_pool {}x{} stride {} pad {}", e.g.kh, e.g.kw, e.g.sh, e.g.ph);
  return fmt::format("onednn conv {}x{}x{}x{} stride {} pad {}{}{}{}", e.g.o, e.g.c / e.g.groups,
                     e.g.kh, e.g.kw, e.g.sh, e.g.ph, e.bias.defined() ? " +bias" : "",
                     e.sum ? " +sum" : "", e.relu ? " +relu" : "");
}

}  // namespace xten::cpu::onednn

namespace xten {

std::string onednn_cpu_isa() {
  using dnnl::cpu_isa;
  cpu::onednn::engine();  // applies the cap of a forced XTEN_CPU_CAPABILITY first
  switch (dnnl::get_effective_cpu_isa()) {
    case cpu_isa::sse41:
      return "sse41";
    case cpu_isa::avx:
      return "avx";
    case cpu_isa::avx2:
      return "avx2";
    case cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case cpu_isa::avx512_mic:
      return "avx512_mic";
    case cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case cpu_isa::avx512_core:
      return "avx512_core";
    case cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case cpu_isa::all:
      break;
  }
  return "none";  // below SSE4.1: reference kernels only
}

bool onednn_takes(ScalarType dtype) {
  // Asked once per dtype with a small product, as the kernels ask (a refused primitive).
  static std::array<std::atomic<int>, static_cast<size_t>(kNumScalarTypes)>
      answer{};  // 0 unknown, 1 yes, 2 no
  std::atomic<int>& a = answer[static_cast<size_t>(dtype)];
  if (a.load() == 0) {
    const auto dt = cpu::onednn::data_type(dtype);
    bool ok = dt.has_value();
    if (ok) {
      try {
        const dnnl::memory::desc m({4, 4}, *dt, dnnl::memory::format_tag::ab);
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(m, m, m), cpu::onednn::engine());
      } catch (const dnnl::error&) {
        ok = false;
      }
    }
    a = ok ? 1 : 2;
  }
  return a.load() == 1;
}

}  // namespace xten
