#include <xten/compile/passes.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include <xten/compile/runtime.h>

namespace xten::compiler {
namespace {

bool returns_alias(const Node& n) {
  for (const SchemaArgument& r : n.op.entry().function_schema().returns())
    if (r.alias) return true;
  return false;
}

// The last live node reading each value (-1: none).
std::vector<int> last_users(const Graph& g) {
  std::vector<int> user(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].dead)
      for (int v : g.nodes[i].used_values()) user[static_cast<size_t>(v)] = static_cast<int>(i);
  return user;
}

std::vector<int> uses_count(const Graph& g) {
  std::vector<int> uses(g.values.size(), 0);
  for (const Node& n : g.nodes)
    if (!n.dead)
      for (int v : n.used_values()) ++uses[static_cast<size_t>(v)];
  for (int v : g.outputs)
    if (v >= 0) ++uses[static_cast<size_t>(v)];
  return uses;
}

void replace_uses(Graph& g, int from, int to) {
  for (Node& n : g.nodes) {
    if (n.dead) continue;
    for (Arg& a : n.args) {
      if (a.kind == Arg::Kind::Value && a.value == from) a.value = to;
      if (a.kind == Arg::Kind::ValueList)
        for (int& v : a.values)
          if (v == from) v = to;
    }
  }
  for (int& v : g.outputs)
    if (v == from) v = to;
}

const Scalar* scalar_arg(const Node& n, size_t i) {
  const Arg& a = n.args[i];
  return a.kind == Arg::Kind::Constant && a.constant.is<Scalar>() ? &a.constant.get<Scalar>()
                                                                  : nullptr;
}

// The tensor of value v if the passes may treat it as a constant: a constant, or with freeze a
// captured tensor, and in either case one no node writes.
const Tensor* constant_tensor(const Graph& g, const std::vector<char>& written, int v,
                              bool freeze) {
  if (v < 0 || written[static_cast<size_t>(v)]) return nullptr;
  const Value& val = g.values[static_cast<size_t>(v)];
  const bool ok = val.kind == ValueKind::Constant || (freeze && val.kind == ValueKind::Captured);
  return ok ? &val.tensor : nullptr;
}

std::string constant_key(const IValue& v) {
  if (v.is_none()) return "None";
  if (v.is<Scalar>()) {
    const Scalar& s = v.get<Scalar>();
    return fmt::format("S{}:{}", static_cast<int>(s.type()), s.to_string());
  }
  if (v.is<int64_t>()) return "i" + std::to_string(v.get<int64_t>());
  if (v.is<double>()) return fmt::format("d{}", v.get<double>());
  if (v.is<bool>()) return v.get<bool>() ? "T" : "F";
  if (v.is<std::vector<int64_t>>())
    return fmt::format("[{}]", fmt::join(v.get<std::vector<int64_t>>(), ","));
  if (v.is<std::string>()) return "s" + v.get<std::string>();
  if (v.is<ScalarType>()) return "t" + std::to_string(static_cast<int>(v.get<ScalarType>()));
  if (v.is<Device>()) return "D" + v.get<Device>().str();
  return "?" + v.type_name();  // a tensor constant: never equal to another (below)
}

}  // namespace

bool is_random_or_uninitialized(const Node& n) {
  const std::string name = n.op.entry().display_name();
  for (const char* r : {"rand", "dropout", "bernoulli", "normal", "multinomial", "empty"})
    if (name.find(r) != std::string::npos) return true;
  return false;
}

std::vector<char> written_values(const Graph& g) {
  std::vector<char> w(g.values.size(), 0);
  for (const Node& n : g.nodes) {
    if (n.dead || !n.writes()) continue;
    const uint64_t mask = n.op.entry().written_args();
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (!((mask >> i) & 1)) continue;
      const Arg& a = n.args[i];
      if (a.kind == Arg::Kind::Value && a.value >= 0) w[static_cast<size_t>(a.value)] = 1;
      if (a.kind == Arg::Kind::ValueList)
        for (int v : a.values)
          if (v >= 0) w[static_cast<size_t>(v)] = 1;
    }
  }
  // Back through views (and in-place results): writing a view writes what it views.
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (n.dead || !returns_alias(n)) continue;
    bool hit = false;
    for (int v : n.defined_values()) hit = hit || w[static_cast<size_t>(v)];
    if (!hit) continue;
    for (int v : n.used_values()) w[static_cast<size_t>(v)] = 1;
  }
  return w;
}

int eliminate_dead_code(Graph& g) {
  std::vector<int> uses = uses_count(g);
  int removed = 0;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    Node& n = g.nodes[i];
    if (n.dead || n.writes() || is_random_or_uninitialized(n)) continue;
    if (n.results.empty()) continue;  // there for its effect (Note [Checks as ops])
    bool used = false;
    for (const Result& r : n.results) used = used || r.kind == Result::Kind::Other;
    for (int v : n.defined_values()) used = used || uses[static_cast<size_t>(v)] > 0;
    if (used) continue;
    n.dead = true;
    ++removed;
    for (int v : n.used_values()) --uses[static_cast<size_t>(v)];
  }
  return removed;
}

int eliminate_common_subexpressions(Graph& g) {
  const std::vector<char> written = written_values(g);
  std::map<std::string, int> seen;  // key -> node
  int merged = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead || n.writes() || is_random_or_uninitialized(n)) continue;
    bool ok = true;
    for (const Result& r : n.results) ok = ok && r.kind != Result::Kind::Other;
    for (int v : n.defined_values()) ok = ok && !written[static_cast<size_t>(v)];
    if (!ok) continue;
    std::string key = n.op.name();
    for (const Arg& a : n.args) {
      if (a.kind == Arg::Kind::Value) {
        key += fmt::format("|%{}", a.value);
      } else if (a.kind == Arg::Kind::ValueList) {
        key += fmt::format("|[{}]", fmt::join(a.values, ","));
      } else {
        if (a.constant.is_tensor()) ok = false;
        key += "|" + constant_key(a.constant);
      }
    }
    if (!ok) continue;
    auto [it, fresh] = seen.emplace(key, static_cast<int>(i));
    if (fresh) continue;
    const Node& first = g.nodes[static_cast<size_t>(it->second)];
    const std::vector<int> a = first.defined_values(), b = n.defined_values();
    if (a.size() != b.size()) continue;
    for (size_t k = 0; k < a.size(); ++k) replace_uses(g, b[k], a[k]);
    n.dead = true;
    ++merged;
  }
  return merged;
}

int fold_constants(Graph& g, bool freeze) {
  const std::vector<char> written = written_values(g);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead || n.writes() || is_random_or_uninitialized(n)) continue;
    bool ok = true;
    for (int v : n.used_values()) ok = ok && constant_tensor(g, written, v, freeze);
    for (const Result& r : n.results) ok = ok && r.kind != Result::Kind::Other;
    for (int v : n.defined_values()) ok = ok && !written[static_cast<size_t>(v)];
    if (!ok) continue;
    std::vector<Tensor> env(g.values.size());
    for (int v : n.used_values())
      env[static_cast<size_t>(v)] = g.values[static_cast<size_t>(v)].tensor;
    run_node(n, env);
    for (int v : n.defined_values()) {
      Value& val = g.values[static_cast<size_t>(v)];
      val.kind = ValueKind::Constant;
      val.node = -1;
      val.tensor = env[static_cast<size_t>(v)];
    }
    n.dead = true;
    ++folded;
  }
  return folded;
}

int eliminate_identity_casts(Graph& g) {
  int removed = 0;
  for (Node& n : g.nodes) {
    if (n.dead) continue;
    const std::string name = n.op.entry().display_name();
    if (name != "to" && name != "contiguous") continue;
    if (name == "to") {
      const Arg& copy = n.args[3];
      if (copy.kind != Arg::Kind::Constant || !copy.constant.is<bool>() ||
          copy.constant.get<bool>())
        continue;
    }
    const std::vector<int> defs = n.defined_values();
    if (defs.size() != 1 || n.args[0].kind != Arg::Kind::Value || n.args[0].value < 0) continue;
    const int in = n.args[0].value;
    if (!(g.values[static_cast<size_t>(in)].meta == g.values[static_cast<size_t>(defs[0])].meta))
      continue;
    // The op returned its input itself: every use of the result is a use of the input.
    replace_uses(g, defs[0], in);
    n.dead = true;
    ++removed;
  }
  return removed;
}

int eliminate_redundant_clones(Graph& g) {
  const std::vector<int> uses = uses_count(g);
  const std::vector<char> written = written_values(g);
  // Whether v is a fresh result that only one node reads: not a view, or a view of such a result
  // (the memory is read through v alone).
  std::function<bool(int)> fresh = [&](int v) {
    if (v < 0) return false;
    const Value& val = g.values[static_cast<size_t>(v)];
    if (val.kind != ValueKind::Node || uses[static_cast<size_t>(v)] != 1) return false;
    const Node& producer = g.nodes[static_cast<size_t>(val.node)];
    if (!returns_alias(producer)) return true;
    return !producer.args.empty() && producer.args[0].kind == Arg::Kind::Value &&
           fresh(producer.args[0].value);
  };
  int removed = 0;
  for (Node& n : g.nodes) {
    if (n.dead) continue;
    const std::string name = n.name();
    const std::vector<int> defs = n.defined_values();
    if (defs.size() != 1 || n.args.empty() || n.args[0].kind != Arg::Kind::Value) continue;
    // clone(src), or (clone's composite) copy_(empty(...), src)
    int src = -1;
    Node* empty = nullptr;
    if (name == "clone") {
      src = n.args[0].value;
    } else if (name == "copy_" && n.args.size() >= 2 && n.args[1].kind == Arg::Kind::Value) {
      const int dst = n.args[0].value;
      if (!fresh(dst)) continue;
      empty = &g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(dst)].node)];
      if (empty->name() != "empty") continue;
      src = n.args[1].value;
    } else {
      continue;
    }
    if (!fresh(src) || written[static_cast<size_t>(src)]) continue;
    const Value& from = g.values[static_cast<size_t>(src)];
    if (!(from.meta == g.values[static_cast<size_t>(defs[0])].meta)) continue;
    // Nothing could tell the copy from the original: the copy's readers read the original.
    replace_uses(g, defs[0], src);
    n.dead = true;
    if (empty) empty->dead = true;
    ++removed;
  }
  return removed;
}

int fuse_linear_relu(Graph& g) {
  static const OperatorHandle linear_relu = Dispatcher::singleton().find("xten::_linear_relu");
  const std::vector<int> uses = uses_count(g);
  const std::vector<char> written = written_values(g);
  const std::vector<int> user = last_users(g);
  int fused = 0;
  for (Node& lin : g.nodes) {
    if (lin.dead || lin.name() != "linear") continue;
    const std::vector<int> out = lin.defined_values();
    if (out.size() != 1) continue;
    const size_t v = static_cast<size_t>(out[0]);
    if (uses[v] != 1 || written[v] || user[v] < 0) continue;
    Node& relu = g.nodes[static_cast<size_t>(user[v])];
    const std::vector<int> r = relu.defined_values();
    if (relu.name() != "relu" || r.size() != 1 || written[static_cast<size_t>(r[0])]) continue;
    // _linear_relu takes linear's arguments and computes relu(linear(...)), NaN kept as relu
    // keeps it (kernels/common/linear.h).
    lin.op = linear_relu;
    replace_uses(g, r[0], out[0]);
    relu.dead = true;
    ++fused;
  }
  return fused;
}

int fold_batch_norm_into_conv(Graph& g, bool freeze) {
  const std::vector<int> uses = uses_count(g);
  const std::vector<char> written = written_values(g);
  auto constant = [&](int v) { return constant_tensor(g, written, v, freeze); };
  // The one live node reading value v (uses[v] == 1), and which argument.
  const std::vector<int> user = last_users(g);
  auto per_channel = [](const Tensor* t, int64_t c, int64_t dims) {
    // [1, C, 1, 1] (or [C, 1, 1]): one value per output channel, broadcast over the rest.
    if (!t || t->numel() != c || t->dim() > dims || t->dim() < 3) return false;
    return t->size(-3) == c;
  };
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& conv = g.nodes[i];
    const std::string name = conv.op.entry().display_name();
    if (conv.dead || (name != "conv2d" && name != "conv2d.padding")) continue;
    const std::vector<int> out = conv.defined_values();
    if (out.size() != 1 || uses[static_cast<size_t>(out[0])] != 1 ||
        written[static_cast<size_t>(out[0])])
      continue;
    const Tensor* w =
        conv.args[1].kind == Arg::Kind::Value ? constant(conv.args[1].value) : nullptr;
    const ScalarType dt = w ? w->dtype() : ScalarType::Undefined;
    if (!w || (dt != kFloat && dt != kBFloat16 && dt != kHalf)) continue;
    const Tensor* b = nullptr;
    if (conv.args[2].kind == Arg::Kind::Value && conv.args[2].value >= 0) {
      b = constant(conv.args[2].value);
      if (!b) continue;
    }
    // The single node reading value v, if it is a `to` to dtype `to_dt` (a 16-bit convolution's
    // output goes to float32 for batch norm's arithmetic and back under autocast).
    auto cast_user = [&](int v, ScalarType to_dt) -> Node* {
      const int id = user[static_cast<size_t>(v)];
      if (id < 0 || uses[static_cast<size_t>(v)] != 1) return nullptr;
      Node& n = g.nodes[static_cast<size_t>(id)];
      if (n.op.entry().display_name() != "to" || n.args[0].value != v) return nullptr;
      const std::vector<int> d = n.defined_values();
      if (d.size() != 1 || written[static_cast<size_t>(d[0])] ||
          g.values[static_cast<size_t>(d[0])].meta.dtype != to_dt)
        return nullptr;
      return &n;
    };
    int x = out[0];  // what batch norm's multiply reads
    Node* widen = nullptr;
    if (dt != kFloat) {
      widen = cast_user(x, kFloat);
      if (!widen) continue;
      x = widen->defined_values()[0];
    }
    const int mul_id = uses[static_cast<size_t>(x)] == 1 ? user[static_cast<size_t>(x)] : -1;
    if (mul_id < 0) continue;
    Node& mul = g.nodes[static_cast<size_t>(mul_id)];
    if (mul.op.entry().display_name() != "mul.Tensor" || mul.args[0].value != x) continue;
    const int64_t c = w->size(0), dims = w->dim();
    const Tensor* scale = constant(mul.args[1].value);
    const int m = mul.defined_values()[0];
    if (!per_channel(scale, c, dims) || uses[static_cast<size_t>(m)] != 1 ||
        written[static_cast<size_t>(m)])
      continue;
    const int add_id = user[static_cast<size_t>(m)];
    if (add_id < 0) continue;
    Node& add = g.nodes[static_cast<size_t>(add_id)];
    const Scalar* alpha = add.args.size() == 3 ? scalar_arg(add, 2) : nullptr;
    if (add.op.entry().display_name() != "add.Tensor" || add.args[0].value != m || !alpha ||
        alpha->to_double() != 1.0)
      continue;
    const Tensor* shift = constant(add.args[1].value);
    int a = add.defined_values()[0];
    if (!per_channel(shift, c, dims) || g.values[static_cast<size_t>(a)].meta.dtype != kFloat ||
        written[static_cast<size_t>(a)])
      continue;
    Node* narrow = nullptr;
    if (dt != kFloat) {
      narrow = cast_user(a, dt);
      if (!narrow) continue;
      a = narrow->defined_values()[0];
    }
    // y = conv(x, W, b) * s + t = conv(x, W * s, b * s + t), s and t per output channel,
    // computed in float32 and rounded once to the convolution's dtype.
    const Tensor s = scale->reshape({c}).to(kFloat), t = shift->reshape({c}).to(kFloat);
    std::vector<int64_t> wshape(static_cast<size_t>(dims), 1);
    wshape[0] = c;
    Value wv, bv;
    wv.kind = bv.kind = ValueKind::Constant;
    wv.tensor = (w->to(kFloat) * s.reshape(wshape)).to(dt).contiguous();
    bv.tensor = (b ? b->to(kFloat) * s + t : t).to(dt).contiguous();
    wv.meta = TensorMeta::of(wv.tensor);
    bv.meta = TensorMeta::of(bv.tensor);
    conv.args[1] = Arg::of_value(g.add_value(std::move(wv)));
    conv.args[2] = Arg::of_value(g.add_value(std::move(bv)));
    replace_uses(g, a, out[0]);
    if (widen) widen->dead = true;
    if (narrow) narrow->dead = true;
    mul.dead = add.dead = true;
    ++folded;
  }
  return folded;
}

// ---- pointwise fusion ------------------------------------------------------------------------
namespace {

// The instruction a node becomes (its operand registers filled in later), if it can be fused.
std::optional<cpu::FusedInstr> fused_instr(const Node& n) {
  using cpu::FusedOpcode;
  const std::string name = n.op.entry().display_name();
  cpu::FusedInstr in{};
  static const std::map<std::string, FusedOpcode> kUnary = {
      {"neg", FusedOpcode::Neg},
      {"abs", FusedOpcode::Abs},
      {"exp", FusedOpcode::Exp},
      {"log", FusedOpcode::Log},
      {"log1p", FusedOpcode::Log1p},
      {"expm1", FusedOpcode::Expm1},
      {"sqrt", FusedOpcode::Sqrt},
      {"rsqrt", FusedOpcode::Rsqrt},
      {"reciprocal", FusedOpcode::Reciprocal},
      {"sin", FusedOpcode::Sin},
      {"cos", FusedOpcode::Cos},
      {"tanh", FusedOpcode::Tanh},
      {"sigmoid", FusedOpcode::Sigmoid},
      {"silu", FusedOpcode::Silu},
      {"relu", FusedOpcode::Relu},
      {"erf", FusedOpcode::Erf},
      {"maximum", FusedOpcode::Maximum},
      {"minimum", FusedOpcode::Minimum},
      {"mul.Tensor", FusedOpcode::Mul},
      {"div.Tensor", FusedOpcode::Div},
  };
  if (auto it = kUnary.find(name); it != kUnary.end()) {
    in.op = it->second;
    return in;
  }
  if (name == "add.Tensor" || name == "sub.Tensor") {
    const Scalar* alpha = scalar_arg(n, 2);
    if (!alpha) return std::nullopt;
    const double a = alpha->to_double();
    const bool sub = name == "sub.Tensor";
    if (a == 1.0) {
      in.op = sub ? FusedOpcode::Sub : FusedOpcode::Add;
    } else {
      in.op = FusedOpcode::AddAlpha;
      in.s0 = static_cast<float>(sub ? -a : a);
    }
    return in;
  }
  if (name == "gelu") {
    const Arg& a = n.args[1];
    if (a.kind != Arg::Kind::Constant || !a.constant.is<std::string>()) return std::nullopt;
    in.op = a.constant.get<std::string>() == "tanh" ? FusedOpcode::GeluTanh : FusedOpcode::GeluErf;
    return in;
  }
  if (name == "clamp") {
    auto bound = [&](size_t i, float none) -> std::optional<float> {
      const Arg& a = n.args[i];
      if (a.kind != Arg::Kind::Constant) return std::nullopt;
      if (a.constant.is_none()) return none;
      if (!a.constant.is<Scalar>()) return std::nullopt;
      return static_cast<float>(a.constant.get<Scalar>().to_double());
    };
    const float inf = std::numeric_limits<float>::infinity();
    const auto lo = bound(1, -inf), hi = bound(2, inf);
    if (!lo || !hi) return std::nullopt;
    in.op = FusedOpcode::Clamp;
    in.s0 = *lo;
    in.s1 = *hi;
    return in;
  }
  return std::nullopt;
}

bool contiguous_f32(const TensorMeta& m) {
  return m.dtype == kFloat && m.storage_offset == 0 && m.is_contiguous();
}

// Whether the node can join a group of `shape` on `device`: its result is a contiguous float32
// tensor of that shape there, and each tensor argument is float32 (or a 0-d number, which may
// also be a CPU number of an XPU op) broadcastable to it, on that device.
bool fusable_in(const Graph& g, const Node& n, const std::vector<int64_t>& shape,
                const Device& device) {
  const std::vector<int> defs = n.defined_values();
  if (defs.size() != 1 || n.results.size() != 1) return false;
  const TensorMeta& out = g.values[static_cast<size_t>(defs[0])].meta;
  if (!contiguous_f32(out) || out.device != device || out.sizes != shape) return false;
  for (int v : n.used_values()) {
    const TensorMeta& m = g.values[static_cast<size_t>(v)].meta;
    if (m.sizes.empty() ? m.device != device && m.device.type() != kCPU : m.device != device)
      return false;
    if (m.dtype != kFloat && !m.sizes.empty()) return false;
    if (m.sizes.size() > shape.size()) return false;
    for (size_t d = 0; d < m.sizes.size(); ++d) {
      const int64_t s = m.sizes[d], o = shape[shape.size() - m.sizes.size() + d];
      if (s != 1 && s != o) return false;
    }
  }
  return true;
}

// layer_norm over the last dim of a contiguous float32 tensor, weight and bias absent or
// contiguous float32 [D] on its device: what a group's row epilogue computes. Its eps, if so.
std::optional<double> row_norm_eps(const Graph& g, const Node& n) {
  if (n.op.entry().display_name() != "layer_norm") return std::nullopt;
  const Arg& in = n.args[0];
  if (in.kind != Arg::Kind::Value || in.value < 0) return std::nullopt;
  const TensorMeta& m = g.values[static_cast<size_t>(in.value)].meta;
  const std::vector<int> defs = n.defined_values();
  if (defs.size() != 1 || m.sizes.empty() || !contiguous_f32(m)) return std::nullopt;
  const TensorMeta& out = g.values[static_cast<size_t>(defs[0])].meta;
  if (!contiguous_f32(out) || out.device != m.device) return std::nullopt;
  const Arg& shape = n.args[1];
  if (shape.kind != Arg::Kind::Constant || !shape.constant.is<std::vector<int64_t>>() ||
      shape.constant.get<std::vector<int64_t>>() != std::vector<int64_t>{m.sizes.back()})
    return std::nullopt;
  for (size_t i : {size_t{2}, size_t{3}}) {
    const Arg& a = n.args[i];
    if (a.kind == Arg::Kind::Constant && a.constant.is_none()) continue;
    if (a.kind != Arg::Kind::Value) return std::nullopt;
    if (a.value < 0) continue;
    const TensorMeta& w = g.values[static_cast<size_t>(a.value)].meta;
    if (!contiguous_f32(w) || w.device != m.device ||
        w.sizes != std::vector<int64_t>{m.sizes.back()})
      return std::nullopt;
  }
  const Arg& eps = n.args[4];
  if (eps.kind != Arg::Kind::Constant || !eps.constant.is<double>()) return std::nullopt;
  return eps.constant.get<double>();
}

// softmax or log_softmax over the last dim of a contiguous float32 CPU tensor, into float32:
// the row epilogue computes them as the eager kernel does. Which, if so.
std::optional<cpu::RowOp> row_softmax(const Graph& g, const Node& n) {
  const std::string name = n.op.entry().display_name();
  if (name != "softmax" && name != "log_softmax") return std::nullopt;
  const Arg& in = n.args[0];
  if (in.kind != Arg::Kind::Value || in.value < 0) return std::nullopt;
  const TensorMeta& m = g.values[static_cast<size_t>(in.value)].meta;
  const std::vector<int> defs = n.defined_values();
  if (defs.size() != 1 || m.sizes.empty() || !contiguous_f32(m) || m.device.type() != kCPU)
    return std::nullopt;
  if (!contiguous_f32(g.values[static_cast<size_t>(defs[0])].meta)) return std::nullopt;
  const Arg& dim = n.args[1];
  const int64_t nd = static_cast<int64_t>(m.sizes.size());
  if (dim.kind != Arg::Kind::Constant || !dim.constant.is<int64_t>() ||
      (dim.constant.get<int64_t>() != -1 && dim.constant.get<int64_t>() != nd - 1))
    return std::nullopt;
  const Arg& dt = n.args[2];
  if (dt.kind != Arg::Kind::Constant ||
      !(dt.constant.is_none() ||
        (dt.constant.is<ScalarType>() && dt.constant.get<ScalarType>() == kFloat)))
    return std::nullopt;
  return name == "softmax" ? cpu::RowOp::Softmax : cpu::RowOp::LogSoftmax;
}

// sum or mean over the last dim (alone) of a contiguous float32 CPU tensor of two or more dims,
// into float32: the row epilogue computes them as the eager kernel does. Which, if so.
std::optional<cpu::RowOp> row_reduction(const Graph& g, const Node& n) {
  const std::string name = n.op.entry().display_name();
  if (name != "sum.dim_IntList" && name != "mean.dim") return std::nullopt;
  const Arg& in = n.args[0];
  if (in.kind != Arg::Kind::Value || in.value < 0 || n.args.size() != 4) return std::nullopt;
  const TensorMeta& m = g.values[static_cast<size_t>(in.value)].meta;
  const std::vector<int> defs = n.defined_values();
  if (defs.size() != 1 || m.sizes.size() < 2 || !contiguous_f32(m) || m.device.type() != kCPU)
    return std::nullopt;
  if (!contiguous_f32(g.values[static_cast<size_t>(defs[0])].meta)) return std::nullopt;
  const Arg& dims = n.args[1];
  const int64_t nd = static_cast<int64_t>(m.sizes.size());
  if (dims.kind != Arg::Kind::Constant || !dims.constant.is<std::vector<int64_t>>() ||
      dims.constant.get<std::vector<int64_t>>().size() != 1)
    return std::nullopt;
  const int64_t dim = dims.constant.get<std::vector<int64_t>>()[0];
  if (dim != -1 && dim != nd - 1) return std::nullopt;
  const Arg& dt = n.args[3];
  if (dt.kind != Arg::Kind::Constant ||
      !(dt.constant.is_none() ||
        (dt.constant.is<ScalarType>() && dt.constant.get<ScalarType>() == kFloat)))
    return std::nullopt;
  return name == "sum.dim_IntList" ? cpu::RowOp::Sum : cpu::RowOp::Mean;
}

// The row epilogue node `n` makes, if it can end a group.
std::optional<cpu::RowOp> row_epilogue(const Graph& g, const Node& n) {
  if (row_norm_eps(g, n)) return cpu::RowOp::LayerNorm;
  if (auto op = row_softmax(g, n)) return op;
  return row_reduction(g, n);
}

void build_program(Graph& g, FusedGroup& grp) {
  std::map<int, int> reg;  // value -> register
  cpu::FusedProgram& p = grp.program;
  p = cpu::FusedProgram();
  std::vector<char> member(g.nodes.size(), 0);
  for (int i : grp.nodes) member[static_cast<size_t>(i)] = 1;
  auto reads = [&](int i) {  // what a member reads through the program's registers
    const Node& n = g.nodes[static_cast<size_t>(i)];
    return i == grp.norm_node ? std::vector<int>{n.args[0].value} : n.used_values();
  };
  for (int i : grp.nodes)
    for (int v : reads(i)) {
      const Value& val = g.values[static_cast<size_t>(v)];
      const bool inside = val.kind == ValueKind::Node && member[static_cast<size_t>(val.node)];
      if (!inside && !reg.count(v)) {
        reg[v] = static_cast<int>(grp.inputs.size());
        grp.inputs.push_back(v);
      }
    }
  p.num_inputs = static_cast<int>(grp.inputs.size());
  int next = p.num_inputs;  // one register per instruction: no instruction reads what it writes
  std::vector<std::string> names;
  for (int i : grp.nodes) {
    const Node& n = g.nodes[static_cast<size_t>(i)];
    if (i == grp.norm_node) {
      grp.norm_register = reg.at(n.args[0].value);
      grp.norm_output = n.defined_values()[0];
      names.push_back(cpu::to_string(grp.norm_op));
      continue;
    }
    cpu::FusedInstr in = *fused_instr(n);
    in.a = reg.at(n.args[0].value);
    if (cpu::is_binary(in.op)) in.b = reg.at(n.args[1].value);
    in.dst = next++;
    reg[n.defined_values()[0]] = in.dst;
    p.code.push_back(in);
    names.push_back(cpu::to_string(in.op));
  }
  p.num_registers = next;
  for (int v : grp.outputs)
    if (v != grp.norm_output) p.outputs.push_back(reg.at(v));
  grp.name = "fused";
  for (size_t k = 0; k < names.size() && k < 6; ++k) grp.name += "_" + names[k];
  if (names.size() > 6) grp.name += fmt::format("_and_{}_more", names.size() - 6);
}

}  // namespace

bool is_fusable_pointwise(const Graph& g, const Node& n) {
  const std::vector<int> defs = n.defined_values();
  return !n.writes() && defs.size() == 1 && n.results.size() == 1 && fused_instr(n) &&
         g.values[static_cast<size_t>(defs[0])].meta.dtype == kFloat;
}

int fuse_pointwise(Graph& g) {
  struct Open {
    std::vector<int> nodes;
    std::vector<int64_t> shape;
    Device device{kCPU};
    bool sealed = false;
    bool norm = false;  // ends in layer_norm's row epilogue
  };
  std::vector<Open> groups;
  std::vector<int> group_of_value(g.values.size(), -1);  // values defined inside a group
  // The open group of this shape and device that defined one of `reads`, else a new one.
  auto join_or_open = [&](const std::vector<int>& reads, const TensorMeta& m) {
    for (int v : reads) {
      const int gi = group_of_value[static_cast<size_t>(v)];
      if (gi < 0) continue;
      const Open& o = groups[static_cast<size_t>(gi)];
      if (!o.sealed && o.shape == m.sizes && o.device == m.device) return gi;
    }
    groups.push_back({{}, m.sizes, m.device, false, false});
    return static_cast<int>(groups.size()) - 1;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead) continue;
    int joined = -1;
    const bool free = n.conv_step < 0;  // not part of a convolution step
    const std::optional<cpu::FusedInstr> instr =
        free ? fused_instr(n) : std::optional<cpu::FusedInstr>();
    const std::vector<int> defs = n.defined_values();
    if (instr && !defs.empty() && n.args[0].kind == Arg::Kind::Value && n.args[0].value >= 0 &&
        (!cpu::is_binary(instr->op) ||
         (n.args[1].kind == Arg::Kind::Value && n.args[1].value >= 0))) {
      const TensorMeta& out = g.values[static_cast<size_t>(defs[0])].meta;
      if (fusable_in(g, n, out.sizes, out.device)) {
        joined = join_or_open(n.used_values(), out);
        groups[static_cast<size_t>(joined)].nodes.push_back(static_cast<int>(i));
        group_of_value[static_cast<size_t>(defs[0])] = joined;
      }
    }
    if (joined < 0 && free && row_epilogue(g, n)) {
      const int v = n.args[0].value;
      joined = join_or_open({v}, g.values[static_cast<size_t>(v)].meta);
      Open& o = groups[static_cast<size_t>(joined)];
      o.nodes.push_back(static_cast<int>(i));
      o.norm = true;
      o.sealed = true;  // the row epilogue ends the group
      group_of_value[static_cast<size_t>(defs[0])] = joined;
    }
    // A node outside a group that reads a group's value makes that group run before it: the
    // group takes no more nodes. A write may alias anything: every group closes.
    for (int v : n.used_values()) {
      const int gi = group_of_value[static_cast<size_t>(v)];
      if (gi >= 0 && gi != joined) groups[static_cast<size_t>(gi)].sealed = true;
    }
    if (n.writes())
      for (Open& o : groups) o.sealed = true;
  }
  // Groups of two or more nodes become fused groups; a single node stays the eager kernel
  // (except layer_norm alone: the row epilogue beats its eager decomposition; softmax alone is
  // its eager kernel).
  const std::vector<int> uses_total = uses_count(g);
  int made = 0;
  for (Open& o : groups) {
    if (o.nodes.size() < 2 &&
        !(o.norm && row_norm_eps(g, g.nodes[static_cast<size_t>(o.nodes.back())])))
      continue;
    FusedGroup grp;
    grp.nodes = o.nodes;
    if (o.norm) {
      const Node& ln = g.nodes[static_cast<size_t>(o.nodes.back())];
      grp.norm_node = o.nodes.back();
      grp.norm_op = *row_epilogue(g, ln);
      if (grp.norm_op == cpu::RowOp::LayerNorm) {
        grp.norm_eps = *row_norm_eps(g, ln);
        grp.norm_weight = ln.args[2].kind == Arg::Kind::Value ? ln.args[2].value : -1;
        grp.norm_bias = ln.args[3].kind == Arg::Kind::Value ? ln.args[3].value : -1;
      }
    }
    grp.shape = o.shape;
    grp.device = o.device;
    const int id = static_cast<int>(g.groups.size());
    // Outputs: results some non-member reads, or the program returns.
    std::vector<int> inside_uses(g.values.size(), 0);
    for (int i : o.nodes)
      for (int v : g.nodes[static_cast<size_t>(i)].used_values())
        ++inside_uses[static_cast<size_t>(v)];
    for (int i : o.nodes) {
      const int v = g.nodes[static_cast<size_t>(i)].defined_values()[0];
      if (uses_total[static_cast<size_t>(v)] > inside_uses[static_cast<size_t>(v)])
        grp.outputs.push_back(v);
    }
    for (int i : o.nodes) g.nodes[static_cast<size_t>(i)].group = id;
    build_program(g, grp);
    g.groups.push_back(std::move(grp));
    ++made;
  }
  return made;
}

// ---- convolution steps ------------------------------------------------------------------------
namespace {

std::optional<std::vector<int64_t>> int_pair(const Arg& a) {
  if (a.kind != Arg::Kind::Constant || !a.constant.is<std::vector<int64_t>>()) return std::nullopt;
  std::vector<int64_t> v = a.constant.get<std::vector<int64_t>>();
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) return std::nullopt;
  return v;
}

// The geometry of a window op (convolution, pooling) from x [n, c, h, w] to y [n, ?, ho, wo];
// the caller sets the output channels and groups.
ConvGeometry window_geometry(const TensorMeta& x, const TensorMeta& y,
                             const std::vector<int64_t>& window, const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation) {
  ConvGeometry geo{};
  geo.n = x.sizes[0];
  geo.c = x.sizes[1];
  geo.h = x.sizes[2];
  geo.w = x.sizes[3];
  geo.kh = window[0];
  geo.kw = window[1];
  geo.sh = stride[0];
  geo.sw = stride[1];
  geo.ph = padding[0];
  geo.pw = padding[1];
  geo.dh = dilation[0];
  geo.dw = dilation[1];
  geo.ho = y.sizes[2];
  geo.wo = y.sizes[3];
  geo.unbatched = false;
  return geo;
}

bool plain_cpu_4d(const TensorMeta& m, ScalarType dt) {
  return m.device.type() == kCPU && m.dtype == dt && m.sizes.size() == 4 && m.is_contiguous() &&
         m.storage_offset == 0;
}

}  // namespace

int plan_convolutions(Graph& g, bool freeze) {
  const std::vector<char> written = written_values(g);
  const std::vector<int> uses = uses_count(g);
  const std::vector<int> user = last_users(g);
  // The one node reading v (and nothing else, not the program's return), if it is named `name`.
  auto sole_user = [&](int v, const char* name) -> int {
    if (uses[static_cast<size_t>(v)] != 1 || written[static_cast<size_t>(v)]) return -1;
    const int u = user[static_cast<size_t>(v)];
    if (u < 0) return -1;
    const Node& n = g.nodes[static_cast<size_t>(u)];
    return n.group < 0 && n.conv_step < 0 && n.op.entry().display_name() == name ? u : -1;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& conv = g.nodes[i];
    if (conv.dead || conv.group >= 0 || conv.op.entry().display_name() != "conv2d") continue;
    const std::vector<int> out = conv.defined_values();
    if (out.size() != 1 || conv.args[0].kind != Arg::Kind::Value || conv.args[0].value < 0 ||
        conv.args[1].kind != Arg::Kind::Value)
      continue;
    const int x = conv.args[0].value;
    const TensorMeta& xm = g.values[static_cast<size_t>(x)].meta;
    const Tensor* w = constant_tensor(g, written, conv.args[1].value, freeze);
    if (!w || (xm.dtype != kFloat && xm.dtype != kBFloat16) || !plain_cpu_4d(xm, xm.dtype) ||
        w->dtype() != xm.dtype || w->dim() != 4 ||
        !plain_cpu_4d(g.values[static_cast<size_t>(out[0])].meta, xm.dtype))
      continue;
    const Tensor* b = nullptr;
    if (conv.args[2].kind == Arg::Kind::Value && conv.args[2].value >= 0) {
      b = constant_tensor(g, written, conv.args[2].value, freeze);
      if (!b) continue;
    }
    const auto stride = int_pair(conv.args[3]), padding = int_pair(conv.args[4]),
               dilation = int_pair(conv.args[5]);
    const Arg& groups = conv.args[6];
    if (!stride || !padding || !dilation || groups.kind != Arg::Kind::Constant ||
        !groups.constant.is<int64_t>())
      continue;
    ConvStep s;
    s.conv = static_cast<int>(i);
    s.src = x;
    int last = out[0];
    std::string name = "fused_conv2d";
    if (const int a = sole_user(last, "add.Tensor"); a >= 0) {
      const Node& add = g.nodes[static_cast<size_t>(a)];
      const Scalar* alpha = scalar_arg(add, 2);
      const int other = add.args[0].value == last ? add.args[1].value : add.args[0].value;
      if (alpha && alpha->to_double() == 1.0 && other >= 0 && other != last &&
          add.args[0].kind == Arg::Kind::Value && add.args[1].kind == Arg::Kind::Value &&
          g.values[static_cast<size_t>(other)].meta.sizes ==
              g.values[static_cast<size_t>(last)].meta.sizes &&
          plain_cpu_4d(g.values[static_cast<size_t>(other)].meta, xm.dtype) &&
          plain_cpu_4d(g.values[static_cast<size_t>(add.defined_values()[0])].meta, xm.dtype)) {
        s.add = a;
        s.other = other;
        last = add.defined_values()[0];
        name += "_add";
      }
    }
    if (const int r = sole_user(last, "relu"); r >= 0) {
      s.relu = r;
      last = g.nodes[static_cast<size_t>(r)].defined_values()[0];
      name += "_relu";
    }
    s.out = last;
    ConvGeometry geo = window_geometry(xm, g.values[static_cast<size_t>(out[0])].meta,
                                       {w->size(2), w->size(3)}, *stride, *padding, *dilation);
    geo.o = w->size(0);
    geo.groups = groups.constant.get<int64_t>();
    s.impl = cpu::onednn::InferenceStep::make(geo, xm.dtype, *w, b ? *b : Tensor(), s.add >= 0,
                                              s.relu >= 0);
    if (!s.impl) continue;
    s.name = name;
    const int id = static_cast<int>(g.convs.size());
    for (int n : s.nodes()) g.nodes[static_cast<size_t>(n)].conv_step = id;
    g.convs.push_back(std::move(s));
  }
  // Max pooling whose indices nothing reads (ResNet's stem): a step too, so that its input and
  // output can stay blocked between the convolutions around it. Checked now with a plain input;
  // built for its input's layout below.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& pool = g.nodes[i];
    if (pool.dead || pool.group >= 0 || pool.conv_step >= 0 ||
        pool.op.entry().display_name() != "max_pool2d_with_indices")
      continue;
    const std::vector<int> out = pool.defined_values();
    if (out.size() != 2 || uses[static_cast<size_t>(out[1])] != 0 ||
        written[static_cast<size_t>(out[0])] || pool.args.size() != 6 ||
        pool.args[0].kind != Arg::Kind::Value || pool.args[0].value < 0)
      continue;
    const int x = pool.args[0].value;
    const TensorMeta& xm = g.values[static_cast<size_t>(x)].meta;
    const TensorMeta& ym = g.values[static_cast<size_t>(out[0])].meta;
    const auto kernel = int_pair(pool.args[1]), padding = int_pair(pool.args[3]),
               dilation = int_pair(pool.args[4]);
    auto stride = int_pair(pool.args[2]);
    if (pool.args[2].kind == Arg::Kind::Constant &&
        pool.args[2].constant.is<std::vector<int64_t>>() &&
        pool.args[2].constant.get<std::vector<int64_t>>().empty())
      stride = kernel;  // max_pool2d's default stride is the window
    const Arg& ceil = pool.args[5];
    if ((xm.dtype != kFloat && xm.dtype != kBFloat16) || !plain_cpu_4d(xm, xm.dtype) ||
        !plain_cpu_4d(ym, xm.dtype) || !kernel || !stride || !padding || !dilation ||
        ceil.kind != Arg::Kind::Constant || !ceil.constant.is<bool>() || ceil.constant.get<bool>())
      continue;
    ConvGeometry geo = window_geometry(xm, ym, *kernel, *stride, *padding, *dilation);
    geo.o = geo.c;
    geo.groups = 1;
    ConvStep s;
    s.conv = static_cast<int>(i);
    s.src = x;
    s.out = out[0];
    s.pool = geo;
    s.impl = cpu::onednn::InferenceStep::max_pool(geo, xm.dtype, nullptr);
    if (!s.impl) continue;
    s.name = "max_pool2d";
    pool.conv_step = static_cast<int>(g.convs.size());
    g.convs.push_back(std::move(s));
  }
  // Layouts: a step's result that only steps read (as their input or residual) stays in oneDNN's
  // layout (Note [Blocked activations] in docs/compile.md, "Convolutions").
  std::vector<int> made_by(g.values.size(), -1);
  for (size_t k = 0; k < g.convs.size(); ++k)
    made_by[static_cast<size_t>(g.convs[k].out)] = static_cast<int>(k);
  std::vector<char> plain_use(g.values.size(), 0);
  for (int v : g.outputs)
    if (v >= 0) plain_use[static_cast<size_t>(v)] = 1;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    for (size_t a = 0; a < n.args.size(); ++a) {
      const Arg& arg = n.args[a];
      std::vector<int> vs = arg.kind == Arg::Kind::ValueList ? arg.values : std::vector<int>{};
      if (arg.kind == Arg::Kind::Value) vs.push_back(arg.value);
      for (int v : vs) {
        if (v < 0) continue;
        bool step_use = false;
        if (n.conv_step >= 0) {
          const ConvStep& s = g.convs[static_cast<size_t>(n.conv_step)];
          const int self = static_cast<int>(&n - g.nodes.data());
          step_use = (self == s.conv && a == 0 && v == s.src) || (self == s.add && v == s.other) ||
                     (self != s.conv && v != s.other);  // the step's own intermediates
        }
        if (!step_use) plain_use[static_cast<size_t>(v)] = 1;
      }
    }
  }
  for (ConvStep& s : g.convs)
    s.blocked_out = !plain_use[static_cast<size_t>(s.out)] && !written[static_cast<size_t>(s.out)];
  for (ConvStep& s : g.convs) {
    const int ps = made_by[static_cast<size_t>(s.src)];
    if (ps >= 0 && g.convs[static_cast<size_t>(ps)].blocked_out) s.src_step = ps;
    if (s.other >= 0) {
      const int po = made_by[static_cast<size_t>(s.other)];
      if (po >= 0 && g.convs[static_cast<size_t>(po)].blocked_out) s.other_step = po;
    }
  }
  // A pooling reads its input in the layout the step before it writes (in step order: that
  // step is built); where oneDNN declines that, the plain one stays (the input is reordered).
  for (ConvStep& s : g.convs) {
    if (!s.pool || s.src_step < 0) continue;
    const TensorMeta& xm = g.values[static_cast<size_t>(s.src)].meta;
    if (auto blocked = cpu::onednn::InferenceStep::max_pool(
            *s.pool, xm.dtype, g.convs[static_cast<size_t>(s.src_step)].impl.get()))
      s.impl = std::move(blocked);
  }
  return static_cast<int>(g.convs.size());
}

}  // namespace xten::compiler
