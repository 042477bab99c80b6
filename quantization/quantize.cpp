// Post-training quantization through interceptors (quantization/quantize.h,
// docs/quantization.md "Preparing and converting a model").
#include <xten/quantization/quantize.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include <xten/autograd/grad_mode.h>
#include <xten/dispatch/ops.h>
#include <xten/nn/modules.h>
#include <xten/quantization/ops.h>

namespace xten::quantization {

QConfig default_qconfig() {
  return QConfig{};
}

namespace {

using nn::ForwardInterceptor;

std::unique_ptr<Observer> activation_observer(const QConfig& q) {
  const ObserverOptions o = ObserverOptions{}.with_reduce_range(q.reduce_range);
  switch (q.activation) {
    case ActivationObserver::MinMax:
      return std::make_unique<MinMaxObserver>(o);
    case ActivationObserver::MovingAverageMinMax:
      return std::make_unique<MovingAverageMinMaxObserver>(o);
    case ActivationObserver::Histogram:
      break;
  }
  return std::make_unique<HistogramObserver>(o);
}

// ---- tracing: who feeds whom ------------------------------------------------------------------

struct Call {
  nn::Module* module;
  std::vector<const TensorImpl*> inputs;
  const TensorImpl* output;
};

class Recorder : public ForwardInterceptor {
 public:
  Recorder(nn::Module* m, std::vector<Call>* calls) : module_(m), calls_(calls) {}
  Tensor forward(const std::vector<Tensor>& inputs, const Original& original) override {
    Tensor out = original(inputs);
    Call c{module_, {}, out.impl()};
    for (const Tensor& t : inputs) c.inputs.push_back(t.impl());
    calls_->push_back(std::move(c));
    return out;
  }

 private:
  nn::Module* module_;
  std::vector<Call>* calls_;
};

bool is_conv(const nn::Module* m) {
  return dynamic_cast<const nn::Conv2dImpl*>(m) != nullptr;
}
bool is_linear(const nn::Module* m) {
  return dynamic_cast<const nn::LinearImpl*>(m) != nullptr;
}

// ---- observing ---------------------------------------------------------------------------------

// A Conv2d or Linear while calibrating: its float computation with a folded batch norm and a
// fused relu, watching its input and output.
class ObservedLayer : public ForwardInterceptor {
 public:
  nn::Module* module = nullptr;
  std::string path;
  Tensor weight, bias;  // with the batch norm folded in
  bool relu = false;
  bool dequantize_output = false;
  std::unique_ptr<Observer> input, output;
  QConfig qconfig;

  Tensor compute(const Tensor& x) const {
    Tensor y;
    const std::optional<Tensor> b = bias.defined() ? std::optional<Tensor>(bias) : std::nullopt;
    if (const auto* c = dynamic_cast<const nn::Conv2dImpl*>(module)) {
      y = conv2d(x, weight, b, c->options.stride().ref(), c->options.padding().ref(),
                 c->options.dilation().ref(), c->options.groups());
    } else {
      y = linear(x, weight, b);
    }
    return relu ? xten::relu(y) : y;
  }
  Tensor forward(const std::vector<Tensor>& inputs, const Original&) override {
    const Tensor& x = inputs[0];
    XTEN_CHECK(!x.is_quantized(), TypeError, path.c_str(),
               "a prepared (observing) model computes in float, but got a {} input",
               dtype_name(x.dtype()));
    input->observe(x);
    Tensor y = compute(x);
    output->observe(y);
    return y;
  }
  std::string describe() const override {
    return fmt::format("observed{}{}", relu ? ", relu fused" : "",
                       bias.defined() && module_had_bn ? ", batch norm folded" : "");
  }
  bool module_had_bn = false;
};

// A batch norm folded into the convolution before it, or a relu fused with the layer before it:
// the layer has done its work.
class Folded : public ForwardInterceptor {
 public:
  explicit Folded(std::string into) : into_(std::move(into)) {}
  Tensor forward(const std::vector<Tensor>& inputs, const Original&) override { return inputs[0]; }
  std::string describe() const override { return "folded into " + into_; }

 private:
  std::string into_;
};

// An Add while calibrating: watches its operands and its sum.
class ObservedAdd : public ForwardInterceptor {
 public:
  std::string path;
  std::unique_ptr<Observer> a, b, output;
  bool relu = false;  // a ReLU module right after it, fused
  bool dequantize_output = false;
  Tensor forward(const std::vector<Tensor>& inputs, const Original& original) override {
    a->observe(inputs[0]);
    b->observe(inputs[1]);
    Tensor y = original(inputs);
    if (relu) y = xten::relu(y);
    output->observe(y);
    return y;
  }
  std::string describe() const override { return relu ? "observed, relu fused" : "observed"; }
};

// ---- quantized ---------------------------------------------------------------------------------

// A float input is quantized with what the layer's input observer chose (the model's input, or
// after a float-only op); a quantized one is taken as it is.
Tensor as_quantized(const Tensor& x, const QParams& p) {
  return x.is_quantized() ? x : quantize_per_tensor(x, p.scale, p.zero_point, kQUInt8);
}

class QuantizedLayer : public ForwardInterceptor {
 public:
  const nn::Conv2dImpl* conv = nullptr;  // else a Linear
  Tensor qweight, bias;
  QParams in, out;
  bool relu = false, dequantize_output = false;
  Tensor forward(const std::vector<Tensor>& inputs, const Original&) override {
    const Tensor x = as_quantized(inputs[0], in);
    const std::optional<Tensor> b = bias.defined() ? std::optional<Tensor>(bias) : std::nullopt;
    Tensor y =
        conv ? quantized::conv2d(x, qweight, b, conv->options.stride().ref(),
                                 conv->options.padding().ref(), conv->options.dilation().ref(),
                                 conv->options.groups(), out.scale, out.zero_point, relu)
             : quantized::linear(x, qweight, b, out.scale, out.zero_point, relu);
    return dequantize_output ? y.dequantize() : y;
  }
  std::string describe() const override {
    return fmt::format("quantized: scale={:.6g}, zero_point={}{}", out.scale, out.zero_point,
                       relu ? ", relu" : "");
  }
};

class QuantizedAdd : public ForwardInterceptor {
 public:
  QParams a, b, out;
  bool relu = false, dequantize_output = false;
  Tensor forward(const std::vector<Tensor>& inputs, const Original&) override {
    Tensor y = quantized::add(as_quantized(inputs[0], a), as_quantized(inputs[1], b), out.scale,
                              out.zero_point, relu);
    return dequantize_output ? y.dequantize() : y;
  }
  std::string describe() const override {
    return fmt::format("quantized: scale={:.6g}, zero_point={}{}", out.scale, out.zero_point,
                       relu ? ", relu" : "");
  }
};

class DynamicLinear : public ForwardInterceptor {
 public:
  Tensor qweight, bias;
  Tensor forward(const std::vector<Tensor>& inputs, const Original&) override {
    return quantized::linear_dynamic(inputs[0], qweight,
                                     bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
  }
  std::string describe() const override { return "dynamic quantized"; }
};

Tensor quantize_weight(const Tensor& w, const QConfig& q) {
  if (q.per_channel_weights) {
    PerChannelMinMaxObserver obs(0);
    obs.observe(w);
    return obs.quantize(w);
  }
  MinMaxObserver obs(ObserverOptions{kQInt8, QScheme::PerTensorSymmetric});
  obs.observe(w);
  return obs.quantize(w);
}

// The weight and bias of conv followed by batch norm bn in evaluation:
// w * gamma / sqrt(var + eps) per output channel, (b - mean) * gamma / sqrt(var + eps) + beta.
std::pair<Tensor, Tensor> fold_batch_norm(const nn::Conv2dImpl& conv, const nn::BatchNormImpl& bn) {
  const Tensor inv_std = (bn.running_var + bn.options.eps()).rsqrt();
  const Tensor gamma = bn.weight.defined() ? bn.weight : ones_like(inv_std);
  const Tensor beta = bn.bias.defined() ? bn.bias : zeros_like(inv_std);
  const Tensor factor = gamma * inv_std;
  const Tensor w = conv.weight * factor.view({-1, 1, 1, 1});
  const Tensor b0 = conv.bias.defined() ? conv.bias : zeros_like(inv_std);
  return {w, (b0 - bn.running_mean) * factor + beta};
}

}  // namespace

void prepare(nn::Module& model, const std::function<Tensor()>& run, const QConfig& qconfig) {
  constexpr const char* op = "quantization::prepare";
  XTEN_CHECK(!model.is_training(), ValueError, op,
             "put the model in evaluation mode first (model->eval()): batch norms are folded "
             "with their running statistics");
  const NoGradGuard no_grad;
  // 1. Trace one forward to see which module's output feeds which.
  std::vector<Call> calls;
  std::map<nn::Module*, std::string> path_of;
  for (auto& [path, m] : model.named_modules()) {
    nn::Module* p = m.get();
    XTEN_CHECK(!p->interceptor(), ValueError, op,
               "module '{}' is already prepared or quantized (dequantize_model() restores it)",
               path);
    if (is_conv(p) || is_linear(p) || dynamic_cast<nn::BatchNormImpl*>(p) ||
        dynamic_cast<nn::ReLUImpl*>(p) || dynamic_cast<nn::AddImpl*>(p)) {
      path_of[p] = path.empty() ? "(model)" : path;
      p->set_interceptor(std::make_shared<Recorder>(p, &calls));
    }
  }
  Tensor result;
  try {
    result = run();
  } catch (...) {
    for (auto& [m, path] : path_of) m->set_interceptor(nullptr);
    throw;
  }
  for (auto& [m, path] : path_of) m->set_interceptor(nullptr);

  std::map<nn::Module*, int> times;
  for (const Call& c : calls) ++times[c.module];
  std::map<const TensorImpl*, const Call*> made_by;
  for (const Call& c : calls) made_by[c.output] = &c;

  // 2. The layers, with what folds into them.
  std::map<nn::Module*, std::shared_ptr<ObservedLayer>> layers;
  std::map<nn::Module*, std::string> folded;           // batch norm or relu -> the layer it joined
  std::map<const TensorImpl*, nn::Module*> chain_end;  // an output -> the layer that made it
  std::map<const TensorImpl*, nn::Module*> add_end;    // likewise for Add (+ ReLU)
  std::set<nn::Module*> add_relu;                      // the Adds with a fused ReLU
  for (const Call& c : calls) {
    nn::Module* m = c.module;
    if ((is_conv(m) || is_linear(m)) && !layers.count(m)) {
      auto l = std::make_shared<ObservedLayer>();
      l->module = m;
      l->path = path_of[m];
      l->qconfig = qconfig;
      l->input = activation_observer(qconfig);
      l->output = activation_observer(qconfig);
      if (auto* conv = dynamic_cast<nn::Conv2dImpl*>(m)) {
        l->weight = conv->weight.detach();
        if (conv->bias.defined()) l->bias = conv->bias.detach();
      } else {
        auto* lin = static_cast<nn::LinearImpl*>(m);
        l->weight = lin->weight.detach();
        if (lin->bias.defined()) l->bias = lin->bias.detach();
      }
      layers[m] = l;
      if (times[m] == 1) chain_end[c.output] = m;
      continue;
    }
    if (dynamic_cast<nn::AddImpl*>(m) && times[m] == 1) {
      add_end[c.output] = m;
      continue;
    }
    if (c.inputs.empty() || times[m] != 1) continue;
    if (auto a = add_end.find(c.inputs[0]);
        a != add_end.end() && dynamic_cast<nn::ReLUImpl*>(m) && !add_relu.count(a->second)) {
      add_relu.insert(a->second);
      folded[m] = path_of[a->second];
      add_end[c.output] = a->second;
      continue;
    }
    auto it = chain_end.find(c.inputs[0]);
    if (it == chain_end.end() || times[it->second] != 1) continue;
    ObservedLayer& l = *layers[it->second];
    if (auto* bn = dynamic_cast<nn::BatchNormImpl*>(m);
        bn && is_conv(l.module) && !l.relu && !l.module_had_bn && bn->running_mean.defined()) {
      auto [w, b] = fold_batch_norm(*static_cast<nn::Conv2dImpl*>(l.module), *bn);
      l.weight = w;
      l.bias = b;
      l.module_had_bn = true;
      folded[m] = l.path;
      chain_end[c.output] = l.module;
    } else if (dynamic_cast<nn::ReLUImpl*>(m) && !l.relu) {
      l.relu = true;
      folded[m] = l.path;
      chain_end[c.output] = l.module;
    }
  }
  XTEN_CHECK(!layers.empty(), ValueError, op,
             "the forward ran no Conv2d or Linear module: nothing to quantize");

  // 3. Install the observers; the layer (or add) that made the model's output dequantizes it.
  nn::Module* last = nullptr;
  if (result.defined()) {
    if (auto it = chain_end.find(result.impl()); it != chain_end.end()) last = it->second;
    if (auto it = add_end.find(result.impl()); !last && it != add_end.end()) last = it->second;
    if (auto it = made_by.find(result.impl()); !last && it != made_by.end())
      last = it->second->module;
  }
  for (auto& [m, l] : layers) {
    l->dequantize_output = m == last;
    m->set_interceptor(l);
  }
  for (auto& [m, into] : folded) m->set_interceptor(std::make_shared<Folded>(into));
  for (auto& [m, path] : path_of) {
    if (!dynamic_cast<nn::AddImpl*>(m)) continue;
    auto a = std::make_shared<ObservedAdd>();
    a->path = path;
    a->a = activation_observer(qconfig);
    a->b = activation_observer(qconfig);
    a->output = activation_observer(qconfig);
    a->relu = add_relu.count(m) > 0;
    a->dequantize_output = m == last;
    m->set_interceptor(a);
  }
}

void convert(nn::Module& model) {
  constexpr const char* op = "quantization::convert";
  const NoGradGuard no_grad;
  // Every layer's parameters first, installed only when all were there: a layer that saw no
  // data leaves the model as it was.
  std::vector<std::pair<nn::Module*, std::shared_ptr<ForwardInterceptor>>> converted;
  for (auto& [path, m] : model.named_modules()) {
    if (auto* l = dynamic_cast<ObservedLayer*>(m->interceptor().get())) {
      auto q = std::make_shared<QuantizedLayer>();
      q->conv = dynamic_cast<const nn::Conv2dImpl*>(m.get());
      q->qweight = quantize_weight(l->weight, l->qconfig);
      if (l->bias.defined()) q->bias = l->bias.to(kFloat).contiguous();
      q->in = l->input->qparams(l->path.c_str());
      q->out = l->output->qparams(l->path.c_str());
      q->relu = l->relu;
      q->dequantize_output = l->dequantize_output;
      converted.emplace_back(m.get(), q);
    } else if (auto* a = dynamic_cast<ObservedAdd*>(m->interceptor().get())) {
      auto q = std::make_shared<QuantizedAdd>();
      q->a = a->a->qparams(a->path.c_str());
      q->b = a->b->qparams(a->path.c_str());
      q->out = a->output->qparams(a->path.c_str());
      q->relu = a->relu;
      q->dequantize_output = a->dequantize_output;
      converted.emplace_back(m.get(), q);
    }
  }
  XTEN_CHECK(!converted.empty(), ValueError, op,
             "the model has no observed layers: call quantization::prepare and calibrate first");
  for (auto& [m, q] : converted) m->set_interceptor(q);
}

int64_t quantize_dynamic(nn::Module& model) {
  const NoGradGuard no_grad;
  int64_t n = 0;
  for (auto& [path, m] : model.named_modules()) {
    auto* lin = dynamic_cast<nn::LinearImpl*>(m.get());
    if (!lin) continue;
    auto d = std::make_shared<DynamicLinear>();
    d->qweight = quantize_weight(lin->weight.detach(), QConfig{});
    if (lin->bias.defined()) d->bias = lin->bias.detach().to(kFloat).contiguous();
    m->set_interceptor(d);
    ++n;
  }
  return n;
}

void dequantize_model(nn::Module& model) {
  for (auto& m : model.modules()) m->set_interceptor(nullptr);
}

}  // namespace xten::quantization
