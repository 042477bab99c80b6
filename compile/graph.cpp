#include <xten/compile/graph.h>

#include <fmt/format.h>

namespace xten::compiler {

TensorMeta TensorMeta::of(const Tensor& t) {
  TensorMeta m;
  m.sizes = t.sizes().vec();
  m.strides = t.strides().vec();
  m.storage_offset = t.storage_offset();
  m.dtype = t.dtype();
  m.device = t.device();
  return m;
}

bool TensorMeta::operator==(const TensorMeta& o) const {
  return sizes == o.sizes && strides == o.strides && storage_offset == o.storage_offset &&
         dtype == o.dtype && device == o.device;
}

namespace {
const char* short_name(ScalarType t) {
  switch (t) {
    case kFloat:
      return "f32";
    case kDouble:
      return "f64";
    case kHalf:
      return "f16";
    case kBFloat16:
      return "bf16";
    case kLong:
      return "i64";
    case kInt:
      return "i32";
    case kShort:
      return "i16";
    case kChar:
      return "i8";
    case kByte:
      return "u8";
    case kBool:
      return "b8";
    default:
      return "?";
  }
}

std::string ivalue_text(const IValue& v) {
  if (v.is_none()) return "None";
  if (v.is<Scalar>()) return v.get<Scalar>().to_string();
  if (v.is<int64_t>()) return std::to_string(v.get<int64_t>());
  if (v.is<double>()) return fmt::format("{}", v.get<double>());
  if (v.is<bool>()) return v.get<bool>() ? "True" : "False";
  if (v.is<std::vector<int64_t>>())
    return fmt::format("[{}]", fmt::join(v.get<std::vector<int64_t>>(), ", "));
  if (v.is<std::string>()) return "\"" + v.get<std::string>() + "\"";
  if (v.is<ScalarType>()) return short_name(v.get<ScalarType>());
  if (v.is<Device>()) return v.get<Device>().str();
  if (v.is_tensor()) return "tensor";
  return v.type_name();
}

std::string value_name(int v) {
  return v < 0 ? "None" : fmt::format("%{}", v);
}
}  // namespace

bool TensorMeta::is_contiguous() const {
  int64_t expect = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expect) return false;
    expect *= sizes[d];
  }
  return true;
}

std::string TensorMeta::to_string() const {
  std::string s = fmt::format("{}[{}]", short_name(dtype), fmt::join(sizes, ", "));
  if (!is_contiguous()) s += fmt::format(" strides [{}]", fmt::join(strides, ", "));
  if (device.type() != kCPU) s += " " + device.str();
  return s;
}

Arg Arg::of_value(int v) {
  Arg a;
  a.kind = Kind::Value;
  a.value = v;
  return a;
}
Arg Arg::of_constant(IValue c) {
  Arg a;
  a.kind = Kind::Constant;
  a.constant = std::move(c);
  return a;
}

std::vector<int> ConvStep::nodes() const {
  std::vector<int> r;
  for (int n : {conv, add, relu})
    if (n >= 0) r.push_back(n);
  return r;
}

std::vector<int> Node::used_values() const {
  std::vector<int> r;
  for (const Arg& a : args) {
    if (a.kind == Arg::Kind::Value && a.value >= 0) r.push_back(a.value);
    if (a.kind == Arg::Kind::ValueList)
      for (int v : a.values)
        if (v >= 0) r.push_back(v);
  }
  return r;
}

std::vector<int> Node::defined_values() const {
  std::vector<int> r;
  for (const Result& res : results) {
    if (res.kind == Result::Kind::Value && res.value >= 0) r.push_back(res.value);
    if (res.kind == Result::Kind::ValueList)
      for (int v : res.values)
        if (v >= 0) r.push_back(v);
  }
  return r;
}

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int Graph::live_nodes() const {
  int n = 0;
  for (const Node& node : nodes) n += !node.dead;
  return n;
}

std::string Graph::to_string() const {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i)
    s += fmt::format("{} = input {} : {}\n", value_name(inputs[i]), i,
                     values[inputs[i]].meta.to_string());
  for (size_t i = 0; i < captured.size(); ++i)
    s += fmt::format("{} = captured {} : {}\n", value_name(captured[i]), i,
                     values[captured[i]].meta.to_string());
  std::vector<char> used(values.size(), 0);  // constants no live node reads are not shown
  for (const Node& n : nodes)
    if (!n.dead)
      for (int v : n.used_values()) used[static_cast<size_t>(v)] = 1;
  for (int v : outputs)
    if (v >= 0) used[static_cast<size_t>(v)] = 1;
  for (const FusedGroup& g : groups)
    for (int v : {g.norm_weight, g.norm_bias})
      if (v >= 0) used[static_cast<size_t>(v)] = 1;
  for (size_t v = 0; v < values.size(); ++v)
    if (values[v].kind == ValueKind::Constant && used[v])
      s += fmt::format("{} = constant : {}\n", value_name(static_cast<int>(v)),
                       values[v].meta.to_string());
  int shown_group = -1, shown_conv = -1;
  for (const Node& n : nodes) {
    if (n.dead) continue;
    if (n.group >= 0 && n.group != shown_group) {
      shown_group = n.group;
      s += fmt::format("# group {}: {}\n", n.group, groups[n.group].name);
    }
    if (n.conv_step >= 0 && n.conv_step != shown_conv) {
      shown_conv = n.conv_step;
      const ConvStep& c = convs[static_cast<size_t>(n.conv_step)];
      s += fmt::format(
          "# conv {}: {}{}{}{}\n", n.conv_step, c.impl->describe(),
          c.src_step >= 0 ? fmt::format(", input blocked by conv {}", c.src_step) : "",
          c.other_step >= 0 ? fmt::format(", residual blocked by conv {}", c.other_step) : "",
          c.blocked_out ? ", output blocked" : "");
    }
    std::vector<std::string> outs, args, metas;
    for (const Result& r : n.results) {
      if (r.kind == Result::Kind::Value) {
        outs.push_back(value_name(r.value));
        if (r.value >= 0) metas.push_back(values[r.value].meta.to_string());
      } else if (r.kind == Result::Kind::ValueList) {
        std::vector<std::string> vs;
        for (int v : r.values) vs.push_back(value_name(v));
        outs.push_back(fmt::format("({})", fmt::join(vs, ", ")));
        metas.push_back(fmt::format("{} tensors", r.values.size()));
      } else {
        outs.push_back("_");
      }
    }
    for (const Arg& a : n.args) {
      if (a.kind == Arg::Kind::Value) {
        args.push_back(value_name(a.value));
      } else if (a.kind == Arg::Kind::ValueList) {
        std::vector<std::string> vs;
        for (int v : a.values) vs.push_back(value_name(v));
        args.push_back(fmt::format("[{}]", fmt::join(vs, ", ")));
      } else {
        args.push_back(ivalue_text(a.constant));
      }
    }
    s +=
        fmt::format("{}{} = {}({}) : {}\n", n.group >= 0 || n.conv_step >= 0 ? "  " : "",
                    fmt::join(outs, ", "), n.name(), fmt::join(args, ", "), fmt::join(metas, ", "));
  }
  std::vector<std::string> outs;
  for (int v : outputs) outs.push_back(value_name(v));
  s += fmt::format("return ({})\n", fmt::join(outs, ", "));
  return s;
}

void Graph::verify() const {
  std::vector<char> defined(values.size(), 0);
  auto check = [&](int v, const std::string& where) {
    XTEN_ASSERT(v >= 0 && static_cast<size_t>(v) < values.size(),
                "graph: {} reads %{}, not a value", where, v);
    XTEN_ASSERT(defined[static_cast<size_t>(v)], "graph: {} reads %{} before it is defined", where,
                v);
  };
  for (int v : inputs) defined[static_cast<size_t>(v)] = 1;
  for (int v : captured) defined[static_cast<size_t>(v)] = 1;
  for (size_t v = 0; v < values.size(); ++v) {
    const Value& val = values[v];
    if (val.kind == ValueKind::Constant || val.kind == ValueKind::Captured) {
      XTEN_ASSERT(val.tensor.defined(), "graph: %{} ({}) holds no tensor", v,
                  val.kind == ValueKind::Constant ? "constant" : "captured");
      defined[v] = 1;
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.dead) continue;
    const std::string where = fmt::format("node {} ({})", i, n.name());
    XTEN_ASSERT(n.args.size() == static_cast<size_t>(n.op.entry().num_arguments()),
                "graph: {} has {} arguments, its schema {}", where, n.args.size(),
                n.op.entry().num_arguments());
    for (int v : n.used_values()) check(v, where);
    for (int v : n.defined_values()) {
      XTEN_ASSERT(values[static_cast<size_t>(v)].kind == ValueKind::Node &&
                      values[static_cast<size_t>(v)].node == static_cast<int>(i),
                  "graph: {} defines %{}, whose producer is node {}", where, v,
                  values[static_cast<size_t>(v)].node);
      XTEN_ASSERT(!defined[static_cast<size_t>(v)], "graph: {} defines %{} a second time", where,
                  v);
      defined[static_cast<size_t>(v)] = 1;
    }
  }
  for (int v : outputs)
    if (v >= 0) check(v, "return");  // -1: the program returned an undefined tensor
  for (size_t g = 0; g < groups.size(); ++g)
    for (int n : groups[g].nodes)
      XTEN_ASSERT(!nodes[static_cast<size_t>(n)].dead &&
                      nodes[static_cast<size_t>(n)].group == static_cast<int>(g),
                  "graph: group {} lists node {}, which is not in it", g, n);
}

}  // namespace xten::compiler
