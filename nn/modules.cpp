#include <xten/nn/modules.h>

#include <cmath>

#include <fmt/format.h>

#include <xten/autograd/grad_mode.h>
#include <xten/nn/init.h>

namespace xten::nn {
namespace {

std::string pair_str(const Pair& p) {
  return fmt::format("({}, {})", p.v[0], p.v[1]);
}
const char* bool_str(bool b) {
  return b ? "true" : "false";
}

// PyTorch's default for Linear and convolutions: weight kaiming_uniform_(a = sqrt(5)), which is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias from the same bound.
void reset_affine(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double fan_in = static_cast<double>(init::calculate_fan_in_and_fan_out(weight).first);
    const double bound = fan_in > 0 ? 1 / std::sqrt(fan_in) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

}  // namespace

Pair::Pair(std::initializer_list<int64_t> l) {
  XTEN_CHECK(l.size() == 1 || l.size() == 2, ValueError, "nn",
             "expected 1 or 2 values for a 2-d window, but got {}", l.size());
  v[0] = *l.begin();
  v[1] = *(l.end() - 1);
}

// ---- Linear ---------------------------------------------------------------------------------

LinearImpl::LinearImpl(const LinearOptions& o) : Module("Linear"), options(o) {
  XTEN_CHECK(o.in_features() >= 0 && o.out_features() >= 0, ValueError, "Linear",
             "features must be non-negative, but got in={} and out={}", o.in_features(),
             o.out_features());
  weight = register_parameter("weight", empty({o.out_features(), o.in_features()}));
  bias = register_parameter("bias", o.bias() ? empty({o.out_features()}) : Tensor());
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  reset_affine(weight, bias);
}

Tensor LinearImpl::forward(const Tensor& input) const {
  auto compute = [this](const Tensor& x) {
    return linear(x, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
  };
  if (interceptor()) return intercepted({input}, [&](const auto& in) { return compute(in[0]); });
  return compute(input);
}

std::string LinearImpl::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", options.in_features(),
                     options.out_features(), bool_str(options.bias()));
}

// ---- Conv2d ---------------------------------------------------------------------------------

Conv2dImpl::Conv2dImpl(const Conv2dOptions& o) : Module("Conv2d"), options(o) {
  XTEN_CHECK(
      o.groups() > 0 && o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
      ValueError, "Conv2d",
      "in_channels ({}) and out_channels ({}) must be divisible by groups ({})", o.in_channels(),
      o.out_channels(), o.groups());
  weight = register_parameter("weight", empty({o.out_channels(), o.in_channels() / o.groups(),
                                               o.kernel_size().v[0], o.kernel_size().v[1]}));
  bias = register_parameter("bias", o.bias() ? empty({o.out_channels()}) : Tensor());
  reset_affine(weight, bias);
}

Tensor Conv2dImpl::forward(const Tensor& input) const {
  auto compute = [this](const Tensor& x) {
    return conv2d(x, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt,
                  options.stride().ref(), options.padding().ref(), options.dilation().ref(),
                  options.groups());
  };
  if (interceptor()) return intercepted({input}, [&](const auto& in) { return compute(in[0]); });
  return compute(input);
}

std::string Conv2dImpl::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", options.in_channels(),
                              options.out_channels(), pair_str(options.kernel_size()),
                              pair_str(options.stride()));
  if (options.padding().v[0] || options.padding().v[1])
    s += ", padding=" + pair_str(options.padding());
  if (options.dilation().v[0] != 1 || options.dilation().v[1] != 1)
    s += ", dilation=" + pair_str(options.dilation());
  if (options.groups() != 1) s += fmt::format(", groups={}", options.groups());
  if (!options.bias()) s += ", bias=false";
  return s;
}

namespace {
void check_groups(const char* op, int64_t in, int64_t out, int64_t groups) {
  XTEN_CHECK(groups > 0 && in % groups == 0 && out % groups == 0, ValueError, op,
             "in_channels ({}) and out_channels ({}) must be divisible by groups ({})", in, out,
             groups);
}
std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}
}  // namespace

Conv1dImpl::Conv1dImpl(const Conv1dOptions& o) : Module("Conv1d"), options(o) {
  check_groups("Conv1d", o.in_channels(), o.out_channels(), o.groups());
  weight = register_parameter(
      "weight", empty({o.out_channels(), o.in_channels() / o.groups(), o.kernel_size()}));
  bias = register_parameter("bias", o.bias() ? empty({o.out_channels()}) : Tensor());
  reset_affine(weight, bias);
}

Tensor Conv1dImpl::forward(const Tensor& input) const {
  return conv1d(input, weight, opt(bias), {options.stride()}, ConvPadding(options.padding()),
                {options.dilation()}, options.groups());
}

std::string Conv1dImpl::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size=({},), stride=({},)", options.in_channels(),
                              options.out_channels(), options.kernel_size(), options.stride());
  if (options.padding()) s += fmt::format(", padding=({},)", options.padding());
  if (options.groups() != 1) s += fmt::format(", groups={}", options.groups());
  if (!options.bias()) s += ", bias=false";
  return s;
}

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& o)
    : Module("ConvTranspose2d"), options(o) {
  check_groups("ConvTranspose2d", o.in_channels(), o.out_channels(), o.groups());
  weight = register_parameter("weight", empty({o.in_channels(), o.out_channels() / o.groups(),
                                               o.kernel_size().v[0], o.kernel_size().v[1]}));
  bias = register_parameter("bias", o.bias() ? empty({o.out_channels()}) : Tensor());
  reset_affine(weight, bias);
}

Tensor ConvTranspose2dImpl::forward(const Tensor& input) const {
  return conv_transpose2d(input, weight, opt(bias), options.stride().ref(), options.padding().ref(),
                          options.output_padding().ref(), options.groups(),
                          options.dilation().ref());
}

std::string ConvTranspose2dImpl::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", options.in_channels(),
                              options.out_channels(), pair_str(options.kernel_size()),
                              pair_str(options.stride()));
  if (options.padding().v[0] || options.padding().v[1])
    s += ", padding=" + pair_str(options.padding());
  if (options.output_padding().v[0] || options.output_padding().v[1])
    s += ", output_padding=" + pair_str(options.output_padding());
  if (!options.bias()) s += ", bias=false";
  return s;
}

// ---- normalization --------------------------------------------------------------------------

BatchNormImpl::BatchNormImpl(const BatchNormOptions& o, std::string name,
                             std::vector<int64_t> input_dims)
    : Module(std::move(name)), options(o), input_dims_(std::move(input_dims)) {
  const int64_t c = o.num_features();
  if (o.affine()) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
  }
  if (o.track_running_stats()) {
    running_mean = register_buffer("running_mean", zeros({c}));
    running_var = register_buffer("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kLong, Device("cpu")));
  }
}

Tensor BatchNormImpl::forward(const Tensor& input) {
  if (interceptor()) return intercepted({input}, [this](const auto& in) { return compute(in[0]); });
  return compute(input);
}

Tensor BatchNormImpl::compute(const Tensor& input) {
  bool ok = false;
  for (int64_t d : input_dims_) ok = ok || input.dim() == d;
  XTEN_CHECK(ok, ValueError, name().c_str(), "expected {}-D input, but got {}-D input",
             fmt::join(input_dims_, " or "), input.dim());
  const bool use_batch_stats = is_training() || !options.track_running_stats();
  if (is_training() && options.track_running_stats()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  auto opt = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
  // In training, the running statistics are updated (when tracked); in evaluation, used.
  return batch_norm(input, opt(weight), opt(bias),
                    use_batch_stats && !is_training() ? std::nullopt : opt(running_mean),
                    use_batch_stats && !is_training() ? std::nullopt : opt(running_var),
                    use_batch_stats, options.momentum(), options.eps());
}

std::string BatchNormImpl::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}",
                     options.num_features(), options.eps(), options.momentum(),
                     bool_str(options.affine()), bool_str(options.track_running_stats()));
}

LayerNormImpl::LayerNormImpl(const LayerNormOptions& o) : Module("LayerNorm"), options(o) {
  if (o.elementwise_affine()) {
    weight = register_parameter("weight", ones(o.normalized_shape()));
    bias = register_parameter("bias", o.bias() ? zeros(o.normalized_shape()) : Tensor());
  }
}

Tensor LayerNormImpl::forward(const Tensor& input) const {
  auto opt = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
  return layer_norm(input, options.normalized_shape(), opt(weight), opt(bias), options.eps());
}

std::string LayerNormImpl::extra_repr() const {
  return fmt::format("({}), eps={}, elementwise_affine={}{}",
                     fmt::join(options.normalized_shape(), ", "), options.eps(),
                     bool_str(options.elementwise_affine()),
                     options.elementwise_affine() && !options.bias() ? ", bias=false" : "");
}

GroupNormImpl::GroupNormImpl(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : Module("GroupNorm"), num_groups(num_groups), num_channels(num_channels), eps(eps) {
  if (affine) {
    weight = register_parameter("weight", ones({num_channels}));
    bias = register_parameter("bias", zeros({num_channels}));
  }
}

Tensor GroupNormImpl::forward(const Tensor& input) const {
  auto opt = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
  return group_norm(input, num_groups, opt(weight), opt(bias), eps);
}

std::string GroupNormImpl::extra_repr() const {
  return fmt::format("{}, {}, eps={}, affine={}", num_groups, num_channels, eps,
                     bool_str(weight.defined()));
}

// ---- dropout, pooling, shape ------------------------------------------------------------------

DropoutImpl::DropoutImpl(double p) : Module("Dropout"), p(p) {
  XTEN_CHECK(p >= 0 && p <= 1, ValueError, "Dropout",
             "dropout probability has to be between 0 and 1, but got {}", p);
}
std::string DropoutImpl::extra_repr() const {
  return fmt::format("p={}", p);
}

Tensor MaxPool2dImpl::forward(const Tensor& input) const {
  return max_pool2d(input, options.kernel_size().ref(), options.stride().ref(),
                    options.padding().ref(), options.dilation().ref(), options.ceil_mode());
}
std::string MaxPool2dImpl::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                     pair_str(options.kernel_size()), pair_str(options.stride()),
                     pair_str(options.padding()), pair_str(options.dilation()),
                     bool_str(options.ceil_mode()));
}

Tensor AvgPool2dImpl::forward(const Tensor& input) const {
  return avg_pool2d(input, options.kernel_size().ref(), options.stride().ref(),
                    options.padding().ref(), options.ceil_mode(), options.count_include_pad());
}
std::string AvgPool2dImpl::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}", pair_str(options.kernel_size()),
                     pair_str(options.stride()), pair_str(options.padding()));
}

std::string AdaptiveAvgPool2dImpl::extra_repr() const {
  return "output_size=" + pair_str(output_size);
}

std::string FlattenImpl::extra_repr() const {
  return fmt::format("start_dim={}, end_dim={}", start_dim, end_dim);
}

EmbeddingImpl::EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim) : Module("Embedding") {
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
  init::normal_(weight);
}
std::string EmbeddingImpl::extra_repr() const {
  return fmt::format("{}, {}", weight.size(0), weight.size(1));
}

// ---- activations ------------------------------------------------------------------------------

GELUImpl::GELUImpl(std::string approximate)
    : FunctionalImpl(
          "GELU", [approximate](const Tensor& x) { return gelu(x, approximate); },
          "approximate='" + approximate + "'") {}
LeakyReLUImpl::LeakyReLUImpl(double slope)
    : FunctionalImpl(
          "LeakyReLU", [slope](const Tensor& x) { return leaky_relu(x, slope); },
          fmt::format("negative_slope={}", slope)) {}
ELUImpl::ELUImpl(double alpha)
    : FunctionalImpl(
          "ELU", [alpha](const Tensor& x) { return elu(x, alpha); },
          fmt::format("alpha={}", alpha)) {}
SoftplusImpl::SoftplusImpl(double beta, double threshold)
    : FunctionalImpl(
          "Softplus", [beta, threshold](const Tensor& x) { return softplus(x, beta, threshold); },
          fmt::format("beta={}, threshold={}", beta, threshold)) {}
SoftmaxImpl::SoftmaxImpl(int64_t dim)
    : FunctionalImpl(
          "Softmax", [dim](const Tensor& x) { return softmax(x, dim); },
          fmt::format("dim={}", dim)) {}
LogSoftmaxImpl::LogSoftmaxImpl(int64_t dim)
    : FunctionalImpl(
          "LogSoftmax", [dim](const Tensor& x) { return log_softmax(x, dim); },
          fmt::format("dim={}", dim)) {}

AddImpl::AddImpl() : Module("Add") {}

Tensor AddImpl::forward(const Tensor& a, const Tensor& b) const {
  if (interceptor()) return intercepted({a, b}, [](const auto& in) { return add(in[0], in[1]); });
  return add(a, b);
}

// ---- containers -------------------------------------------------------------------------------

Tensor SequentialImpl::forward(const Tensor& input) const {
  Tensor x = input;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const auto* linear = dynamic_cast<const LinearImpl*>(steps_[i].module.get());
    if (linear && i + 1 < steps_.size() && !linear->interceptor() &&
        !steps_[i + 1].module->interceptor() &&
        dynamic_cast<const ReLUImpl*>(steps_[i + 1].module.get())) {  // Note [Linear -> ReLU]
      x = _linear_relu(x, linear->weight,
                       linear->bias.defined() ? std::optional<Tensor>(linear->bias) : std::nullopt);
      ++i;
      continue;
    }
    x = steps_[i].run(x);
  }
  return x;
}

namespace {
std::shared_ptr<Module> child_at(const Module& m, size_t i) {
  XTEN_CHECK(i < m.named_children().size(), IndexError, m.name().c_str(),
             "index {} is out of range for {} modules", i, m.named_children().size());
  return m.named_children()[i].second;
}
}  // namespace

std::shared_ptr<Module> SequentialImpl::operator[](size_t i) const {
  return child_at(*this, i);
}
std::shared_ptr<Module> ModuleListImpl::operator[](size_t i) const {
  return child_at(*this, i);
}

bool ModuleDictImpl::contains(const std::string& key) const {
  for (const auto& [n, c] : named_children())
    if (n == key) return true;
  return false;
}
std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  for (const auto& [n, c] : named_children())
    if (n == key) return c;
  XTEN_FAIL(IndexError, "ModuleDict", "no module named '{}'", key);
}

}  // namespace xten::nn
