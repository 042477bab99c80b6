#include <xten/nn/module.h>

#include <set>
#include <sstream>

#include <fmt/format.h>

#include <xten/autograd/grad_mode.h>
#include <xten/dispatch/ops.h>

namespace xten::nn {

void Module::check_new_name(const std::string& name, const char* what) const {
  XTEN_CHECK(!name.empty() && name.find('.') == std::string::npos, ValueError, name_.c_str(),
             "a {} name must be non-empty and contain no '.', but got '{}'", what, name);
  auto taken = [&](const auto& list) {
    for (const auto& [n, v] : list)
      if (n == name) return true;
    return false;
  };
  XTEN_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_), ValueError,
             name_.c_str(), "'{}' is already registered in this module", name);
}

Tensor& Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_new_name(name, "parameter");
  if (t.defined() && requires_grad && !t.requires_grad()) t.requires_grad_(true);
  parameters_.emplace_back(name, std::move(t));
  return parameters_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor t) {
  check_new_name(name, "buffer");
  buffers_.emplace_back(name, std::move(t));
  return buffers_.back().second;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> child) {
  check_new_name(name, "submodule");
  XTEN_CHECK(child != nullptr, ValueError, name_.c_str(), "submodule '{}' is null", name);
  children_.emplace_back(name, std::move(child));
}

// Visits (dotted name, tensor, is_param) for this module's tensors, then its children's.
template <class F>
void Module::walk(const std::string& prefix, bool recurse, F&& f) const {
  for (const auto& [n, t] : parameters_)
    if (t.defined()) f(prefix + n, t, true);
  for (const auto& [n, t] : buffers_)
    if (t.defined()) f(prefix + n, t, false);
  if (!recurse) return;
  for (const auto& [n, c] : children_) c->walk(prefix + n + ".", true, f);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors r;
  std::set<const TensorImpl*> seen;  // a tensor shared by two modules is listed once
  walk("", recurse, [&](const std::string& n, const Tensor& t, bool is_param) {
    if (is_param && seen.insert(t.impl()).second) r.emplace_back(n, t);
  });
  return r;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> r;
  for (auto& [n, t] : named_parameters(recurse)) r.push_back(t);
  return r;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors r;
  walk("", recurse, [&](const std::string& n, const Tensor& t, bool is_param) {
    if (!is_param) r.emplace_back(n, t);
  });
  return r;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> r;
  for (auto& [n, t] : named_buffers(recurse)) r.push_back(t);
  return r;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> r;
  for (const auto& [n, c] : children_) r.push_back(c);
  return r;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules(
    bool include_self) {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> r;
  std::function<void(const std::string&, const Module&)> visit = [&](const std::string& prefix,
                                                                     const Module& m) {
    for (const auto& [n, c] : m.children_) {
      const std::string name = prefix.empty() ? n : prefix + "." + n;
      r.emplace_back(name, c);
      visit(name, *c);
    }
  };
  if (include_self) {
    std::shared_ptr<Module> self = weak_from_this().lock();
    XTEN_CHECK(self != nullptr, ValueError, name_.c_str(),
               "modules(include_self) needs the module held by a shared_ptr (a holder); inside a "
               "constructor use apply() or include_self = false");
    r.emplace_back("", std::move(self));
  }
  visit("", *this);
  return r;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  std::vector<std::shared_ptr<Module>> r;
  for (auto& [n, m] : named_modules(include_self)) r.push_back(m);
  return r;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [n, c] : children_) c->apply(fn);
  fn(*this);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

void Module::for_each_tensor(const std::function<void(Tensor&, bool)>& f) {
  for (auto& [n, t] : parameters_)
    if (t.defined()) f(t, true);
  for (auto& [n, t] : buffers_)
    if (t.defined()) f(t, false);
  for (auto& [n, c] : children_) c->for_each_tensor(f);
}

namespace {
// t.set_data(f(t)) and the same for its gradient, outside the graph.
void move_in_place(Tensor& t, const std::function<Tensor(const Tensor&)>& f) {
  NoGradGuard no_grad;
  t.set_data(f(t.detach()));
  if (t.grad().defined()) t.grad() = f(t.grad());
}
}  // namespace

void Module::to(Device device) {
  for_each_tensor([&](Tensor& t, bool) {
    if (t.device() != device) move_in_place(t, [&](const Tensor& x) { return x.to(device); });
  });
}

void Module::to(ScalarType dtype) {
  XTEN_CHECK(is_floating_type(dtype), TypeError, name_.c_str(),
             "to() only accepts floating dtypes, but got {}", to_string(dtype));
  for_each_tensor([&](Tensor& t, bool) {
    if (is_floating_type(t.dtype()) && t.dtype() != dtype)
      move_in_place(t, [&](const Tensor& x) { return x.to(dtype); });
  });
}

void Module::to(MemoryFormat format) {
  XTEN_CHECK(format != MemoryFormat::Preserve, ValueError, name_.c_str(),
             "to(memory_format) takes contiguous_format or channels_last, not preserve_format");
  for_each_tensor([&](Tensor& t, bool) {
    if (t.dim() == 4 && !t.is_contiguous(format))
      move_in_place(t, [&](const Tensor& x) { return x.contiguous(format); });
  });
}

void zero_grads(const std::vector<Tensor>& params, bool set_to_none) {
  for (const Tensor& p : params) {
    Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = Tensor();
    } else {
      g = g.detach();
      g.zero_();
    }
  }
}

void Module::zero_grad(bool set_to_none) {
  zero_grads(parameters(), set_to_none);
}

NamedTensors Module::state_dict() const {
  NamedTensors r;
  walk("", true, [&](const std::string& n, const Tensor& t, bool) { r.emplace_back(n, t); });
  return r;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  NamedTensors own = state_dict();
  std::vector<std::string> missing, unexpected;
  std::set<std::string> given;
  for (const auto& [n, t] : state) given.insert(n);
  for (const auto& [n, t] : own)
    if (!given.count(n)) missing.push_back(n);
  std::set<std::string> known;
  for (const auto& [n, t] : own) known.insert(n);
  for (const auto& [n, t] : state)
    if (!known.count(n)) unexpected.push_back(n);
  XTEN_CHECK(!strict || (missing.empty() && unexpected.empty()), ValueError, "load_state_dict",
             "Error(s) in loading state_dict for {}: missing keys [{}], unexpected keys [{}]",
             name_, fmt::join(missing, ", "), fmt::join(unexpected, ", "));
  NoGradGuard no_grad;
  for (auto& [n, dst] : own) {
    for (const auto& [m, src] : state) {
      if (m != n) continue;
      XTEN_CHECK(src.sizes() == dst.sizes(), ValueError, "load_state_dict",
                 "size mismatch for {}: copying a tensor of shape {}, the module's is {}", n,
                 src.sizes(), dst.sizes());
      XTEN_CHECK(src.dtype() == dst.dtype(), ValueError, "load_state_dict",
                 "dtype mismatch for {}: copying a tensor of dtype {}, the module's is {}", n,
                 to_string(src.dtype()), to_string(dst.dtype()));
      dst.copy_(src);
    }
  }
}

namespace {
void print_module(std::ostream& os, const Module& m, const std::string& indent) {
  os << m.name() << "(";
  std::string extra = m.extra_repr();
  if (m.interceptor()) {
    const std::string more = m.interceptor()->describe();
    if (!more.empty()) extra += (extra.empty() ? "" : ", ") + more;
  }
  if (m.named_children().empty()) {
    os << extra << ")";
    return;
  }
  os << "\n";
  if (!extra.empty()) os << indent << "  " << extra << "\n";
  for (const auto& [n, c] : m.named_children()) {
    os << indent << "  (" << n << "): ";
    print_module(os, *c, indent + "  ");
    os << "\n";
  }
  os << indent << ")";
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const Module& m) {
  print_module(os, m, "");
  return os;
}

std::string repr(const Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

}  // namespace xten::nn
