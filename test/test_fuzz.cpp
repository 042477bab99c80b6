// A seeded random op fuzzer (docs/testing.md, Note [Op fuzzer]). Each iteration picks an op from
// the dispatcher (every op of the op table), makes arguments from its schema (random shapes with
// zero sizes and broadcasting, dtypes, dims, indices, strings, non-contiguous and expanded
// views, in-place outputs) and calls it boxed: plainly, with gradients (then backward), or
// under autocast. Every call must succeed or raise one of xten's
// typed errors; with XPU (test_fuzz_xpu), a call that succeeds on both devices must agree.
// Anything else (another exception, a crash, a hang) fails and prints the iteration's seed.
//
//   XTEN_FUZZ_ITERS=N   iterations (default 5000; 1000 under AddressSanitizer)
//   XTEN_FUZZ_SEED=S    the first iteration's seed (default 1); iteration i uses S + i
//   XTEN_FUZZ_ONLY=op   only this op (with XTEN_FUZZ_SEED, replays one failure)
//   XTEN_FUZZ_VERBOSE=1 print each call before making it
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <xten/dispatch/dispatcher.h>

#include "test_util.h"
#ifdef XTEN_FUZZ_XPU
#include "xpu_test_env.h"
#endif

using namespace xten;

namespace {

#ifdef XTEN_FUZZ_XPU
const bool kEnv = xten::testing::set_xpu_test_env("1G");
#endif

// ---- what is running, for the crash and hang reports -------------------------------------
std::atomic<uint64_t> g_seed{0};
std::atomic<int64_t> g_started_ms{0};
char g_op[128] = "";

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void report(const char* what) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof(buf),
                              "\nfuzz: %s in op %s, seed %llu (replay: XTEN_FUZZ_SEED=%llu "
                              "XTEN_FUZZ_ITERS=1 XTEN_FUZZ_ONLY=%s)\n",
                              what, g_op, static_cast<unsigned long long>(g_seed.load()),
                              static_cast<unsigned long long>(g_seed.load()), g_op);
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
}

void on_fatal_signal(int sig) {
  report(strsignal(sig));
  signal(sig, SIG_DFL);
  raise(sig);
}

// ---- argument generation ---------------------------------------------------------------
const std::vector<ScalarType> kDtypes = {kFloat,    kFloat, kFloat, kDouble, kHalf,
                                         kBFloat16, kLong,  kInt,   kBool,   kByte};

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.size()) - 1))];
  }
};

// How a tensor argument is made, so that each device gets the same values and the same view.
struct TensorRecipe {
  std::vector<int64_t> shape;
  ScalarType dtype = kFloat;
  uint64_t seed = 0;
  enum class View { None, Transposed, Strided, Expanded } view = View::None;
  bool index_like = false;  // values in [-1, 5], int64

  Tensor make(const Device& device) const {
    std::vector<int64_t> s = shape;
    if (view == View::Transposed && s.size() >= 2) std::swap(s.front(), s.back());
    if (view == View::Strided && !s.empty()) s.back() *= 2;
    if (view == View::Expanded && !s.empty()) s.front() = 1;
    manual_seed(seed);
    Tensor t;
    if (index_like) {
      t = randint(-1, 6, s, TensorOptions().dtype(kLong));
    } else if (dtype == kBool) {
      t = randn(s) > 0;
    } else if (is_floating_type(dtype)) {
      t = (randn(s, TensorOptions().dtype(kDouble)) * 2).to(dtype);
    } else {
      t = (randn(s, TensorOptions().dtype(kDouble)) * 3).round().clamp(-3, 9).to(dtype);
    }
    t = t.to(device);
    if (view == View::Transposed && s.size() >= 2) t = t.transpose(0, -1);
    if (view == View::Strided && !s.empty()) t = t.slice(-1, 0, t.size(-1), 2);
    if (view == View::Expanded && !s.empty()) t = t.expand(shape);
    return t;
  }
  std::string str() const {
    static const char* views[] = {"", " transposed", " strided", " expanded"};
    return fmt::format("Tensor{}{}{}", to_string(dtype), IntArrayRef(shape),
                       views[static_cast<int>(view)]);
  }
};

// One argument: a recipe for tensors, an IValue for the rest.
struct Arg {
  std::optional<TensorRecipe> tensor;
  std::vector<TensorRecipe> list;
  bool is_list = false;
  IValue value;
  bool device_arg = false;  // a Device: the device the call runs on

  IValue make(const Device& device) const {
    if (tensor) return tensor->make(device);
    if (is_list) {
      std::vector<Tensor> ts;
      for (const auto& r : list) ts.push_back(r.make(device));
      return ts;
    }
    if (device_arg) return device;
    return value;
  }
  std::string str() const;
};

std::string ivalue_str(const IValue& v) {
  if (v.is_none()) return "None";
  if (v.is<int64_t>()) return std::to_string(v.get<int64_t>());
  if (v.is<double>()) return fmt::format("{}", v.get<double>());
  if (v.is<bool>()) return v.get<bool>() ? "true" : "false";
  if (v.is<std::string>()) return "'" + v.get<std::string>() + "'";
  if (v.is<std::vector<int64_t>>()) return to_string(IntArrayRef(v.get<std::vector<int64_t>>()));
  if (v.is<ScalarType>()) return to_string(v.get<ScalarType>());
  if (v.is<Scalar>()) {
    const Scalar& s = v.get<Scalar>();
    return s.is_floating_point() ? fmt::format("{}", s.to<double>())
                                 : std::to_string(s.to<int64_t>());
  }
  return v.type_name();
}

std::string Arg::str() const {
  if (tensor) return tensor->str();
  if (is_list) {
    std::string s = "[";
    for (const auto& r : list) s += r.str() + " ";
    return s + "]";
  }
  if (device_arg) return "device";
  return ivalue_str(value);
}

bool name_has(const std::string& name, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (name.find(p) != std::string::npos) return true;
  return false;
}

// The call's shapes: a base shape that most tensor arguments share (or broadcast against).
struct CallShapes {
  std::vector<int64_t> base;
  int64_t rank() const { return static_cast<int64_t>(base.size()); }
};

TensorRecipe tensor_recipe(Gen& g, const CallShapes& cs, const std::string& arg_name) {
  TensorRecipe r;
  r.seed = g.rng();
  const double kind = std::uniform_real_distribution<double>(0, 1)(g.rng);
  if (kind < 0.6) {
    r.shape = cs.base;
  } else if (kind < 0.8) {  // broadcastable: leading dims dropped, some set to 1
    const int64_t keep = g.uniform(0, cs.rank());
    r.shape.assign(cs.base.end() - keep, cs.base.end());
    for (auto& d : r.shape)
      if (g.chance(0.3)) d = 1;
  } else {  // unrelated
    const int64_t rank = g.uniform(0, 4);
    for (int64_t i = 0; i < rank; ++i) r.shape.push_back(g.uniform(0, 5));
  }
  r.index_like = name_has(arg_name, {"index", "indices", "target"}) && g.chance(0.8);
  r.dtype = r.index_like                                                 ? kLong
            : name_has(arg_name, {"mask", "condition"}) && g.chance(0.8) ? kBool
                                                                         : g.pick(kDtypes);
  if (!r.shape.empty() && g.chance(0.2)) {
    const int v = static_cast<int>(g.uniform(1, 3));
    r.view = static_cast<TensorRecipe::View>(v);
  }
  return r;
}

const std::vector<std::string> kStrings = {"mean",      "sum",      "none",  "constant", "reflect",
                                           "replicate", "tanh",     "floor", "trunc",    "same",
                                           "valid",     "circular", "bogus", ""};

Arg make_arg(Gen& g, const CallShapes& cs, const SchemaArgument& a) {
  Arg arg;
  const SchemaType& t = a.type;
  const std::string& n = a.name;
  if (t.optional && g.chance(0.35)) return arg;  // None
  const int64_t r = std::max<int64_t>(cs.rank(), 1);
  switch (t.base) {
    case SchemaBaseType::Tensor:
      if (t.list) {
        arg.is_list = true;
        for (int64_t i = g.uniform(0, 3); i > 0; --i) arg.list.push_back(tensor_recipe(g, cs, n));
      } else {
        arg.tensor = tensor_recipe(g, cs, n);
      }
      return arg;
    case SchemaBaseType::Int:
      if (t.list) {
        std::vector<int64_t> v;
        const bool dims = name_has(n, {"dim", "perm"});
        const bool window = name_has(n, {"kernel", "stride", "padding", "dilation", "output"});
        const int64_t len = window ? g.uniform(0, 2) : dims ? g.uniform(0, r) : g.uniform(0, 4);
        for (int64_t i = 0; i < len; ++i)
          v.push_back(dims ? g.uniform(-r, r - 1) : window ? g.uniform(0, 4) : g.uniform(-1, 5));
        arg.value = v;
      } else if (name_has(n, {"dim"})) {
        arg.value = g.uniform(-r - 1, r);
      } else {
        arg.value = g.uniform(-2, 6);
      }
      return arg;
    case SchemaBaseType::Float: {
      static const std::vector<double> v = {0.0, 0.5, 1.0, -1.0, 1e-5, 2.0, 0.1};
      arg.value = g.pick(v);
      return arg;
    }
    case SchemaBaseType::Bool:
      arg.value = g.chance(0.5);
      return arg;
    case SchemaBaseType::Scalar:
      if (g.chance(0.5))
        arg.value = Scalar(g.uniform(-2, 4));
      else
        arg.value = Scalar(std::uniform_real_distribution<double>(-3, 3)(g.rng));
      return arg;
    case SchemaBaseType::Str:
      if (a.default_value && a.default_value->size() >= 2 && g.chance(0.5))
        arg.value = a.default_value->substr(1, a.default_value->size() - 2);
      else
        arg.value = g.pick(kStrings);
      return arg;
    case SchemaBaseType::ScalarType:
      arg.value = g.pick(kDtypes);
      return arg;
    case SchemaBaseType::Device:
      arg.device_arg = true;
      return arg;
  }
  return arg;
}

// ---- outcomes ---------------------------------------------------------------------------
struct Outcome {
  bool ok = false;
  std::string error;  // the typed error's message
  Stack results;      // results, then the arguments (for in-place and out= ops)
};

// The modes a call runs in: plain; with floating tensor arguments requiring gradients (the
// autograd layer, then backward from the first floating result); under autocast (bfloat16).
enum class Mode { Plain, Grad, Autocast };

// Backward from the result's sum; the arguments' gradients join the results. A typed error
// (a derivative not implemented for a dtype, a bad in-place use) is the op's answer too.
void backward_into(const IValue& result, const Stack& inputs, Stack* results) {
  if (!result.is_tensor() || !result.get<Tensor>().defined()) return;
  const Tensor& r = result.get<Tensor>();
  if (!r.requires_grad() || !is_floating_type(r.dtype())) return;
  r.sum().backward();
  for (const IValue& v : inputs)
    if (v.is_tensor() && v.get<Tensor>().defined() && v.get<Tensor>().requires_grad())
      results->push_back(v.get<Tensor>().grad());
}

Outcome run(const OperatorHandle& op, const std::vector<Arg>& args, const Device& device,
            Mode mode) {
  Outcome o;
  Stack stack;
  try {
    for (const auto& a : args) {
      IValue v = a.make(device);
      if (mode == Mode::Grad && v.is_tensor() && is_floating_type(v.get<Tensor>().dtype()))
        v.get<Tensor>().requires_grad_();
      stack.push_back(std::move(v));
    }
  } catch (const Error& e) {
    ADD_FAILURE() << "making the arguments failed: " << e.what();
    return o;
  }
  const Stack inputs = stack;
  try {
    {
      std::optional<autocast::AutocastGuard> amp;
      if (mode == Mode::Autocast) amp.emplace(device.type(), kBFloat16);
      op.call_boxed(&stack);
    }
    o.results = std::move(stack);
    if (mode == Mode::Grad && !o.results.empty()) backward_into(o.results[0], inputs, &o.results);
    o.ok = true;
    o.results.insert(o.results.end(), inputs.begin(), inputs.end());
  } catch (const Error& e) {  // every typed error derives from xten::Error
    o.error = e.what();
    if (dynamic_cast<const InternalError*>(&e)) {
      ADD_FAILURE() << "internal error: " << e.what();
      report("an InternalError");
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a typed error: " << e.what();
    report("a non-xten exception");
  }
  return o;
}

// Ops whose results are not determined by their inputs (random, or uninitialized memory), and
// ops whose index outputs may legitimately differ on ties: only their values are compared.
// Attention draws its dropout from the generator (the fuzzer's dropout_p is random; without
// dropout the XPU is compared with the CPU by test_attention_xpu and the op database).
bool random_results(const std::string& name) {
  return name_has(
      name, {"rand", "dropout", "xten::empty", "multinomial", "xten::scaled_dot_product_attention",
             "_scaled_dot_product_attention_math"});
}
bool ties_differ(const std::string& name) {
  return name_has(name, {"sort", "topk", "argmax", "argmin", "max.dim", "min.dim",
                         "max_pool2d_with_indices", "adaptive_max_pool2d"});
}

// How much of a result is determined: all of it, its values but not its integer outputs (ties),
// or only its shape and dtype (an order left unspecified).
enum class Determined { All, Values, Shape };

std::string compare(const IValue& c, const IValue& x, Determined what) {
  if (c.is_tensor() != x.is_tensor()) return "result kinds differ";
  if (!c.is_tensor()) {
    if (c.is_tensor_list()) {
      const auto &a = c.get<std::vector<Tensor>>(), &b = x.get<std::vector<Tensor>>();
      if (a.size() != b.size()) return "list lengths differ";
      for (size_t i = 0; i < a.size(); ++i)
        if (auto d = compare(a[i], b[i], what); !d.empty()) return d;
    }
    return "";
  }
  const Tensor& a = c.get<Tensor>();
  const Tensor& b = x.get<Tensor>();
  if (!a.defined() || !b.defined()) return a.defined() == b.defined() ? "" : "undefined result";
  if (a.sizes() != b.sizes())
    return fmt::format("shapes {} (cpu) and {} (xpu)", a.sizes(), b.sizes());
  if (a.dtype() != b.dtype())
    return fmt::format("dtypes {} and {}", to_string(a.dtype()), to_string(b.dtype()));
  if (what == Determined::Shape || (what == Determined::Values && !is_floating_type(a.dtype())))
    return "";
  const Tensor ad = a.to(kDouble), bd = b.to("cpu").to(kDouble);
  double rtol = 1e-3, atol = 1e-4;
  if (a.dtype() == kHalf) rtol = atol = 1e-2;
  if (a.dtype() == kBFloat16) rtol = atol = 5e-2;
  if (!is_floating_type(a.dtype())) rtol = atol = 0;
  if (ad.numel() == 0) return "";
  const Tensor nan_a = isnan(ad), nan_b = isnan(bd);
  if ((nan_a != nan_b).any().item<bool>()) return "NaNs in different places";
  // Equal values (infinities included) pass; the rest within atol + rtol * |xpu|.
  const Tensor zero = zeros({}, ad.options());
  const Tensor excess =
      where(logical_or(ad == bd, nan_a), zero, (ad - bd).abs() - (bd.abs() * rtol + atol));
  if (excess.max().item<double>() > 0)
    return fmt::format("values differ (max excess {} over atol {} + rtol {} * |xpu|)",
                       excess.max().item<double>(), atol, rtol);
  return "";
}

void fuzz(bool with_xpu) {
  const char* iters_env = std::getenv("XTEN_FUZZ_ITERS");
  const char* seed_env = std::getenv("XTEN_FUZZ_SEED");
  const char* only = std::getenv("XTEN_FUZZ_ONLY");
  const bool verbose = std::getenv("XTEN_FUZZ_VERBOSE") != nullptr;
#if defined(__SANITIZE_ADDRESS__)
  const int64_t default_iters = 1000;
#else
  const int64_t default_iters = 5000;
#endif
  const int64_t iters = iters_env ? std::atoll(iters_env) : default_iters;
  const uint64_t first = seed_env ? std::strtoull(seed_env, nullptr, 10) : 1;
  std::vector<std::string> names;
  for (const auto& n : Dispatcher::singleton().op_names())
    if (n.rfind("xten::", 0) == 0 && (!only || n == std::string("xten::") + only))
      names.push_back(n);
  ASSERT_FALSE(names.empty());

  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL}) signal(sig, on_fatal_signal);
  std::atomic<bool> done{false};
  std::thread watchdog([&] {  // a hang is a failure too
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t started = g_started_ms.load();
      if (started && now_ms() - started > 120'000) {
        report("a call running over 120 s (hang)");
        std::_Exit(3);
      }
    }
  });

  int64_t succeeded = 0, typed = 0, compared = 0, done_iters = 0;
  for (int64_t i = 0; i < iters && !::testing::Test::HasFailure(); ++i, ++done_iters) {
    const uint64_t seed = first + static_cast<uint64_t>(i);
    Gen g(seed * 0x9E3779B97F4A7C15ull);
    const std::string& name = g.pick(names);
    const OperatorHandle op = Dispatcher::singleton().find(name);
    g_seed = seed;
    std::snprintf(g_op, sizeof(g_op), "%s", name.c_str() + 6);
    CallShapes cs;
    const bool spatial = name_has(name, {"conv", "pool", "upsample", "norm", "pad"});
    for (int64_t d = spatial ? g.uniform(2, 4) : g.uniform(0, 4); d > 0; --d)
      cs.base.push_back(spatial ? g.uniform(1, 6) : (g.chance(0.1) ? 0 : g.uniform(1, 5)));
    std::vector<Arg> args;
    for (const auto& a : op.entry().function_schema().arguments())
      args.push_back(make_arg(g, cs, a));
    const double m = std::uniform_real_distribution<double>(0, 1)(g.rng);
    const Mode mode = m < 0.7 ? Mode::Plain : m < 0.85 ? Mode::Grad : Mode::Autocast;
    auto describe = [&] {
      std::string s =
          fmt::format("seed {} (XTEN_FUZZ_SEED={} XTEN_FUZZ_ITERS=1 XTEN_FUZZ_ONLY={}): {}(", seed,
                      seed, name.substr(6), name.substr(6));
      for (size_t k = 0; k < args.size(); ++k) s += (k ? ", " : "") + args[k].str();
      static const char* modes[] = {"", " with gradients", " under autocast"};
      return s + ")" + modes[static_cast<int>(mode)];
    };

    if (verbose) std::fprintf(stderr, "%s\n", describe().c_str());
    g_started_ms = now_ms();
    const Outcome c = run(op, args, Device("cpu"), mode);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << describe();
      break;
    }
    if (c.ok)
      ++succeeded;
    else
      ++typed;
    if (with_xpu) {
      const Outcome x = run(op, args, Device("xpu"), mode);
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << describe() << " on xpu";
        break;
      }
      // Under autocast the devices' lower precisions round differently: no comparison.
      if (c.ok && x.ok && !random_results(name) && mode != Mode::Autocast) {
        ++compared;
        EXPECT_EQ(c.results.size(), x.results.size()) << describe();
        for (size_t k = 0; k < std::min(c.results.size(), x.results.size()); ++k) {
          // topk(sorted=false) leaves the order unspecified.
          const bool unordered = name == "xten::topk" && args.size() > 4 &&
                                 args[4].value.is<bool>() && !args[4].value.get<bool>();
          const Determined what = unordered                    ? Determined::Shape
                                  : ties_differ(name) && k > 0 ? Determined::Values
                                                               : Determined::All;
          const std::string d = compare(c.results[k], x.results[k], what);
          if (!d.empty()) {
            ADD_FAILURE() << describe() << ": output " << k << ": " << d;
            break;
          }
        }
      }
    }
    g_started_ms = 0;
  }
  done = true;
  watchdog.join();
  std::printf(
      "fuzz: %lld iterations from seed %llu: %lld succeeded on the CPU, %lld raised typed "
      "errors%s\n",
      static_cast<long long>(done_iters), static_cast<unsigned long long>(first),
      static_cast<long long>(succeeded), static_cast<long long>(typed),
      with_xpu ? fmt::format(", {} compared with the XPU", compared).c_str() : "");
}

}  // namespace

#ifdef XTEN_FUZZ_XPU
TEST(Fuzz, RandomOpsOnCpuAndXpu) {
  fuzz(true);
}
#else
TEST(Fuzz, RandomOpsOnCpu) {
  fuzz(false);
}
#endif
