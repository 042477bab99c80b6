// Autocast: state, guard, cast cache, and one boxed kernel per cast policy, registered on
// AutocastCPU / AutocastXPU for the ops of each device type's lists (policy_lists below).
#include <xten/autocast/autocast.h>

#include <unordered_map>

#include <xten/core/device_interface.h>
#include <xten/core/error.h>
#include <xten/core/tensor.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/local_dispatch_key_set.h>

namespace xten::autocast {

const char* to_string(CastPolicy p) {
  switch (p) {
    case CastPolicy::kLowerPrecisionFp:
      return "lower_precision_fp";
    case CastPolicy::kFp32:
      return "fp32";
    case CastPolicy::kFp32SetOptDtype:
      return "fp32_set_opt_dtype";
    case CastPolicy::kPromote:
      return "promote";
    case CastPolicy::kBanned:
      return "banned";
  }
  return "?";
}

namespace {

// The device type's autocast key, from its row of dispatch keys.
DispatchKey key_of(DeviceType t) {
  const int i = static_cast<int>(t);
  XTEN_CHECK(i >= 0 && i < kNumDeviceTypes, ValueError, "autocast",
             "autocast supports the device types cpu and xpu, but got {}", Device(t).str());
  return kDeviceTypeKeys[i][2];
}

void check_dtype(ScalarType dtype) {
  XTEN_CHECK(dtype == kHalf || dtype == kBFloat16, ValueError, "autocast",
             "the autocast dtype must be float16 or bfloat16, but got {}", xten::to_string(dtype));
}

// The autocast dtype per device type, once this thread sets one; else the backend's default
// (core/device_interface.h).
thread_local std::optional<ScalarType> t_dtype[kNumDeviceTypes];
thread_local int t_nesting = 0;
// Note [Cast cache] (docs/autocast.md): source TensorImpl -> the source, its cast, and the
// source's version when the cast was made. Holding the source keeps its TensorImpl alive, so an
// address cannot be reused by another tensor while the entry exists; an entry whose source was
// written since (an optimizer step) is stale and is made again.
struct CachedCast {
  Tensor source, cast;
  uint32_t version;
};
thread_local std::unordered_map<const TensorImpl*, CachedCast> t_cache;

int slot(DeviceType t) {
  key_of(t);
  return static_cast<int>(t);
}

}  // namespace

bool is_autocast_enabled(DeviceType device_type) {
  return !local_dispatch_key_set().excluded.has(key_of(device_type));
}

void set_autocast_enabled(DeviceType device_type, bool enabled) {
  LocalDispatchKeySet s = local_dispatch_key_set();
  const DispatchKey k = key_of(device_type);
  s.excluded = enabled ? s.excluded.remove(k) : s.excluded.add(k);
  set_local_dispatch_key_set(s);
}

ScalarType get_autocast_dtype(DeviceType device_type) {
  const std::optional<ScalarType>& t = t_dtype[slot(device_type)];
  return t ? *t : device_interface(device_type).default_autocast_dtype();
}

void set_autocast_dtype(DeviceType device_type, ScalarType dtype) {
  check_dtype(dtype);
  t_dtype[slot(device_type)] = dtype;
}

AutocastGuard::AutocastGuard(DeviceType device_type, std::optional<ScalarType> dtype, bool enabled)
    : device_type_(device_type),
      previous_enabled_(is_autocast_enabled(device_type)),
      previous_dtype_(get_autocast_dtype(device_type)) {
  if (dtype) set_autocast_dtype(device_type, *dtype);
  set_autocast_enabled(device_type, enabled);
  ++t_nesting;
}

AutocastGuard::~AutocastGuard() {
  if (--t_nesting == 0) clear_cache();
  t_dtype[slot(device_type_)] = previous_dtype_;
  set_autocast_enabled(device_type_, previous_enabled_);
}

void clear_cache() {
  t_cache.clear();
}
size_t cache_size() {
  return t_cache.size();
}

namespace {

// ---- the policies --------------------------------------------------------------------------

// Only floating tensors on the scope's device are cast, and float64 never is.
bool eligible(const Tensor& t, DeviceType d) {
  return t.defined() && t.device().type() == d && is_floating_type(t.dtype()) &&
         t.dtype() != kDouble;
}

Tensor cast(const Tensor& t, ScalarType to, DeviceType d) {
  if (!eligible(t, d) || t.dtype() == to) return t;
  const bool cacheable =
      t_nesting > 0 && t.requires_grad() && t.dtype() == kFloat && to == get_autocast_dtype(d);
  if (!cacheable) return t.to(to);
  auto it = t_cache.find(t.impl());
  if (it != t_cache.end() && it->second.version == t._version()) return it->second.cast;
  Tensor c = t.to(to);
  t_cache[t.impl()] = CachedCast{t, c, t._version()};
  return c;
}

// What a policy needs to know of an op's schema: which arguments the op writes (never cast)
// and where its `ScalarType? dtype` argument is.
struct OpInfo {
  std::vector<bool> mutable_arg;
  int dtype_arg = -1;
};

OpInfo op_info(const FunctionSchema& schema) {
  OpInfo info;
  const SchemaType optional_dtype{SchemaBaseType::ScalarType, false, true};
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const SchemaArgument& a = schema.arguments()[i];
    if (a.name == "dtype" && a.type == optional_dtype) info.dtype_arg = static_cast<int>(i);
    info.mutable_arg.push_back(schema.writes_argument(i));
  }
  return info;
}

template <class F>
void for_each_tensor(Stack& stack, const OpInfo& info, F&& f) {
  for (size_t i = 0; i < stack.size(); ++i) {
    if (i < info.mutable_arg.size() && info.mutable_arg[i]) continue;
    IValue& v = stack[i];
    if (v.is_tensor()) {
      f(v.get<Tensor>());
    } else if (v.is_tensor_list()) {
      for (Tensor& t : v.get<std::vector<Tensor>>()) f(t);
    }
  }
}

// The boxed kernel of a policy on a device type.
BoxedKernel policy_kernel(CastPolicy policy, DeviceType d, bool (*applies)(const Stack&)) {
  auto info = std::make_shared<std::pair<std::once_flag, OpInfo>>();
  return [policy, d, applies, info](const OperatorHandle& op, DispatchKeySet, Stack* stack) {
    std::call_once(info->first, [&] { info->second = op_info(op.entry().function_schema()); });
    const OpInfo& oi = info->second;
    XTEN_CHECK(
        policy != CastPolicy::kBanned, ValueError, op.entry().display_name().c_str(),
        "is unsafe to autocast: many models apply a sigmoid right before it, and in "
        "float16/bfloat16 that loses too much; use binary_cross_entropy_with_logits, which "
        "combines the two and is safe to autocast (or leave the autocast scope for this op)");
    // The rest of the call, nested ops included, runs without autocast.
    ExcludeDispatchKeyGuard no_autocast(kDefaultExcludedKeys);
    if (!applies || applies(*stack)) {
      switch (policy) {
        case CastPolicy::kLowerPrecisionFp:
        case CastPolicy::kFp32: {
          const ScalarType to = policy == CastPolicy::kFp32 ? kFloat : get_autocast_dtype(d);
          for_each_tensor(*stack, oi, [&](Tensor& t) { t = cast(t, to, d); });
          break;
        }
        case CastPolicy::kFp32SetOptDtype: {
          if (oi.dtype_arg < 0) {  // no dtype argument: run in float32 by casting
            for_each_tensor(*stack, oi, [&](Tensor& t) { t = cast(t, kFloat, d); });
            break;
          }
          IValue& dtype = (*stack)[static_cast<size_t>(oi.dtype_arg)];
          const IValue& first = (*stack)[0];
          if (dtype.is_none() && first.is_tensor() && eligible(first.get<Tensor>(), d))
            dtype = kFloat;
          break;
        }
        case CastPolicy::kPromote: {
          ScalarType widest = get_autocast_dtype(d);
          auto widen = [&](const Tensor& t) {
            if (eligible(t, d)) widest = promote_types(widest, t.dtype());
          };
          for (size_t i = 0; i < stack->size(); ++i) {  // written arguments count too
            IValue& v = (*stack)[i];
            if (v.is_tensor()) widen(v.get<Tensor>());
            if (v.is_tensor_list())
              for (const Tensor& t : v.get<std::vector<Tensor>>()) widen(t);
          }
          for_each_tensor(*stack, oi, [&](Tensor& t) { t = cast(t, widest, d); });
          break;
        }
        case CastPolicy::kBanned:
          break;
      }
    }
    op.call_boxed(stack);
  };
}

// pad runs in float32 on CPU only in its reflect and replicate modes (PyTorch lists
// reflection_pad and replication_pad, not constant_pad_nd).
bool pad_not_constant(const Stack& s) {
  return s.size() > 2 && s[2].is<std::string>() && s[2].get<std::string>() != "constant";
}

struct Entry {
  const char* op;
  CastPolicy policy;
  bool (*applies)(const Stack&) = nullptr;
};

// ---- the lists (docs/autocast.md; from PyTorch's aten/src/ATen/autocast_mode.cpp, for the
// ops xten has) ---------------------------------------------------------------------------
using P = CastPolicy;
// Never destroyed: ops run until the process ends (static destructors, other threads).
const std::vector<Entry>& policy_lists(DeviceType d) {
  static const auto* cpu = new std::vector<Entry>{
      {"conv1d", P::kLowerPrecisionFp},
      {"conv1d.padding", P::kLowerPrecisionFp},
      {"conv2d", P::kLowerPrecisionFp},
      {"conv2d.padding", P::kLowerPrecisionFp},
      {"conv_transpose2d", P::kLowerPrecisionFp},
      {"bmm", P::kLowerPrecisionFp},
      {"mm", P::kLowerPrecisionFp},
      {"baddbmm", P::kLowerPrecisionFp},
      {"addmm", P::kLowerPrecisionFp},
      {"linear", P::kLowerPrecisionFp},
      {"_linear_relu", P::kLowerPrecisionFp},
      {"matmul", P::kLowerPrecisionFp},
      {"prelu", P::kLowerPrecisionFp},
      {"scaled_dot_product_attention", P::kLowerPrecisionFp},
      {"binary_cross_entropy", P::kFp32},
      {"prod.dim_IntList", P::kFp32},
      {"pad", P::kFp32, pad_not_constant},
      {"mse_loss", P::kFp32},
      {"nll_loss", P::kFp32},
      {"smooth_l1_loss", P::kFp32},
      {"cross_entropy", P::kFp32},
      {"l1_loss", P::kFp32},
      {"huber_loss", P::kFp32},
      {"kl_div", P::kFp32},
      {"binary_cross_entropy_with_logits", P::kFp32},
      {"stack", P::kPromote},
      {"cat", P::kPromote},
  };
  static const auto* xpu = new std::vector<Entry>{
      {"conv1d", P::kLowerPrecisionFp},
      {"conv1d.padding", P::kLowerPrecisionFp},
      {"conv2d", P::kLowerPrecisionFp},
      {"conv2d.padding", P::kLowerPrecisionFp},
      {"conv_transpose2d", P::kLowerPrecisionFp},
      {"prelu", P::kLowerPrecisionFp},
      {"addmm", P::kLowerPrecisionFp},
      {"matmul", P::kLowerPrecisionFp},
      {"mm", P::kLowerPrecisionFp},
      {"mv", P::kLowerPrecisionFp},
      {"linear", P::kLowerPrecisionFp},
      {"_linear_relu", P::kLowerPrecisionFp},
      {"baddbmm", P::kLowerPrecisionFp},
      {"bmm", P::kLowerPrecisionFp},
      {"scaled_dot_product_attention", P::kLowerPrecisionFp},
      {"exp", P::kFp32},
      {"expm1", P::kFp32},
      {"log", P::kFp32},
      {"log10", P::kFp32},
      {"log2", P::kFp32},
      {"log1p", P::kFp32},
      {"reciprocal", P::kFp32},
      {"rsqrt", P::kFp32},
      {"tan", P::kFp32},
      {"pow.Tensor_Tensor", P::kFp32},
      {"softplus", P::kFp32},
      {"layer_norm", P::kFp32},
      {"group_norm", P::kFp32},
      {"nll_loss", P::kFp32},
      {"kl_div", P::kFp32},
      {"l1_loss", P::kFp32},
      {"smooth_l1_loss", P::kFp32},
      {"huber_loss", P::kFp32},
      {"mse_loss", P::kFp32},
      {"binary_cross_entropy_with_logits", P::kFp32},
      {"logsumexp", P::kFp32},
      {"norm.ScalarOpt_dim", P::kFp32},
      {"prod.dim_IntList", P::kFp32SetOptDtype},
      {"softmax", P::kFp32SetOptDtype},
      {"log_softmax", P::kFp32SetOptDtype},
      {"cumprod", P::kFp32SetOptDtype},
      {"cumsum", P::kFp32SetOptDtype},
      {"sum.dim_IntList", P::kFp32SetOptDtype},
      {"addcmul", P::kPromote},
      {"atan2", P::kPromote},
      {"dot", P::kPromote},
      {"index_put_", P::kPromote},
      {"scatter_add", P::kPromote},
      {"binary_cross_entropy", P::kBanned},
  };
  return d == kCPU ? *cpu : *xpu;
}

void register_lists(Library& m, DeviceType d) {
  for (const Entry& e : policy_lists(d)) m.impl(e.op, policy_kernel(e.policy, d, e.applies));
}

}  // namespace

std::optional<CastPolicy> policy_of(DeviceType device_type, const std::string& op) {
  key_of(device_type);
  for (const Entry& e : policy_lists(device_type))
    if (op == e.op) return e.policy;
  return std::nullopt;
}

std::vector<std::pair<std::string, CastPolicy>> policies(DeviceType device_type) {
  key_of(device_type);
  std::vector<std::pair<std::string, CastPolicy>> out;
  for (const Entry& e : policy_lists(device_type)) out.emplace_back(e.op, e.policy);
  return out;
}

// Every op not in a list runs in its inputs' dtypes: the autocast keys fall through.
LIBRARY_IMPL(_, AutocastCPU, m) {
  m.fallback(KernelFunction::fallthrough());
}
LIBRARY_IMPL(_, AutocastXPU, m) {
  m.fallback(KernelFunction::fallthrough());
}
LIBRARY_IMPL(xten, AutocastCPU, m) {
  register_lists(m, kCPU);
}
LIBRARY_IMPL(xten, AutocastXPU, m) {
  register_lists(m, kXPU);
}

}  // namespace xten::autocast
