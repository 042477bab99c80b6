#pragma once
// The layers of nn (docs/nn.md): each an Impl (the module, forward() over the functional op it
// wraps) and its holder (XTEN_MODULE), with an options struct of chained setters where it has
// settings, as libtorch's: nn::Conv2d(nn::Conv2dOptions(3, 64, 7).stride(2).padding(3)).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <xten/dispatch/ops.h>
#include <xten/nn/module.h>

namespace xten::nn {

// 1 or 2 values for a 2-d window (3 means {3, 3}).
struct Pair {
  Pair(int64_t v) : v{v, v} {}  // NOLINT
  Pair(std::initializer_list<int64_t> l);
  int64_t v[2];
  IntArrayRef ref() const { return IntArrayRef(v, 2); }
};

// ---- Linear ---------------------------------------------------------------------------------
struct LinearOptions {
  LinearOptions(int64_t in, int64_t out) : in_features_(in), out_features_(out) {}
  XTEN_ARG(int64_t, in_features);
  XTEN_ARG(int64_t, out_features);
  XTEN_ARG(bool, bias) = true;
};
// y = x W^T + b. W [out, in] and b from U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's kaiming_uniform_
// with a = sqrt(5)).
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in, int64_t out) : LinearImpl(LinearOptions(in, out)) {}
  explicit LinearImpl(const LinearOptions& options);
  Tensor forward(const Tensor& input) const;
  std::string extra_repr() const override;
  void reset_parameters();
  LinearOptions options;
  Tensor weight, bias;
};
XTEN_MODULE(Linear);

// ---- convolutions -----------------------------------------------------------------------------
struct Conv2dOptions {
  Conv2dOptions(int64_t in, int64_t out, Pair kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(kernel) {}
  XTEN_ARG(int64_t, in_channels);
  XTEN_ARG(int64_t, out_channels);
  XTEN_ARG(Pair, kernel_size);
  XTEN_ARG(Pair, stride) = 1;
  XTEN_ARG(Pair, padding) = 0;
  XTEN_ARG(Pair, dilation) = 1;
  XTEN_ARG(int64_t, groups) = 1;
  XTEN_ARG(bool, bias) = true;
};
// Weight [out, in / groups, kh, kw] and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
class Conv2dImpl : public Module {
 public:
  Conv2dImpl(int64_t in, int64_t out, Pair kernel) : Conv2dImpl(Conv2dOptions(in, out, kernel)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);
  Tensor forward(const Tensor& input) const;
  std::string extra_repr() const override;
  Conv2dOptions options;
  Tensor weight, bias;
};
XTEN_MODULE(Conv2d);

struct Conv1dOptions {
  Conv1dOptions(int64_t in, int64_t out, int64_t kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(kernel) {}
  XTEN_ARG(int64_t, in_channels);
  XTEN_ARG(int64_t, out_channels);
  XTEN_ARG(int64_t, kernel_size);
  XTEN_ARG(int64_t, stride) = 1;
  XTEN_ARG(int64_t, padding) = 0;
  XTEN_ARG(int64_t, dilation) = 1;
  XTEN_ARG(int64_t, groups) = 1;
  XTEN_ARG(bool, bias) = true;
};
// Weight [out, in / groups, k], initialised as Conv2d's.
class Conv1dImpl : public Module {
 public:
  Conv1dImpl(int64_t in, int64_t out, int64_t kernel)
      : Conv1dImpl(Conv1dOptions(in, out, kernel)) {}
  explicit Conv1dImpl(const Conv1dOptions& options);
  Tensor forward(const Tensor& input) const;
  std::string extra_repr() const override;
  Conv1dOptions options;
  Tensor weight, bias;
};
XTEN_MODULE(Conv1d);

struct ConvTranspose2dOptions {
  ConvTranspose2dOptions(int64_t in, int64_t out, Pair kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(kernel) {}
  XTEN_ARG(int64_t, in_channels);
  XTEN_ARG(int64_t, out_channels);
  XTEN_ARG(Pair, kernel_size);
  XTEN_ARG(Pair, stride) = 1;
  XTEN_ARG(Pair, padding) = 0;
  XTEN_ARG(Pair, output_padding) = 0;
  XTEN_ARG(Pair, dilation) = 1;
  XTEN_ARG(int64_t, groups) = 1;
  XTEN_ARG(bool, bias) = true;
};
// Weight [in, out / groups, kh, kw]; PyTorch computes its fan_in from dim 1 (out / groups
// times the kernel), and so does this.
class ConvTranspose2dImpl : public Module {
 public:
  ConvTranspose2dImpl(int64_t in, int64_t out, Pair kernel)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in, out, kernel)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options);
  Tensor forward(const Tensor& input) const;
  std::string extra_repr() const override;
  ConvTranspose2dOptions options;
  Tensor weight, bias;
};
XTEN_MODULE(ConvTranspose2d);

// ---- normalization ----------------------------------------------------------------------------
struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  XTEN_ARG(int64_t, num_features);
  XTEN_ARG(double, eps) = 1e-5;
  XTEN_ARG(double, momentum) = 0.1;
  XTEN_ARG(bool, affine) = true;
  XTEN_ARG(bool, track_running_stats) = true;
};
// Batch statistics in training (running_mean/var updated with momentum, num_batches_tracked
// counted), running statistics in evaluation; without track_running_stats always batch ones.
// weight 1, bias 0. `input_dims` are the accepted input ranks (BatchNorm1d: 2 or 3, 2d: 4).
class BatchNormImpl : public Module {
 public:
  BatchNormImpl(const BatchNormOptions& options, std::string name, std::vector<int64_t> input_dims);
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  BatchNormOptions options;
  // forward without its interceptor (Note [Forward interception]).
  Tensor compute(const Tensor& input);
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  std::vector<int64_t> input_dims_;
};
class BatchNorm1dImpl : public BatchNormImpl {
 public:
  BatchNorm1dImpl(const BatchNormOptions& o) : BatchNormImpl(o, "BatchNorm1d", {2, 3}) {}  // NOLINT
};
class BatchNorm2dImpl : public BatchNormImpl {
 public:
  BatchNorm2dImpl(const BatchNormOptions& o) : BatchNormImpl(o, "BatchNorm2d", {4}) {}  // NOLINT
};
XTEN_MODULE(BatchNorm1d);
XTEN_MODULE(BatchNorm2d);

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> shape) : normalized_shape_(std::move(shape)) {}  // NOLINT
  XTEN_ARG(std::vector<int64_t>, normalized_shape);
  XTEN_ARG(double, eps) = 1e-5;
  XTEN_ARG(bool, elementwise_affine) = true;
  XTEN_ARG(bool, bias) = true;  // with elementwise_affine: a bias too (PyTorch 2.1's option)
};
class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  Tensor forward(const Tensor& input) const;
  std::string extra_repr() const override;
  LayerNormOptions options;
  Tensor weight, bias;
};
XTEN_MODULE(LayerNorm);

class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) const;
  std::string extra_repr() const override;
  int64_t num_groups, num_channels;
  double eps;
  Tensor weight, bias;
};
XTEN_MODULE(GroupNorm);

// ---- dropout, pooling, shape ------------------------------------------------------------------
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& input) const { return dropout(input, p, is_training()); }
  std::string extra_repr() const override;
  double p;
};
XTEN_MODULE(Dropout);

struct MaxPool2dOptions {
  MaxPool2dOptions(Pair kernel) : kernel_size_(kernel), stride_(kernel) {}  // NOLINT
  XTEN_ARG(Pair, kernel_size);
  XTEN_ARG(Pair, stride);
  XTEN_ARG(Pair, padding) = 0;
  XTEN_ARG(Pair, dilation) = 1;
  XTEN_ARG(bool, ceil_mode) = false;
};
class MaxPool2dImpl : public Module {
 public:
  MaxPool2dImpl(const MaxPool2dOptions& o) : Module("MaxPool2d"), options(o) {}  // NOLINT
  MaxPool2dImpl(Pair kernel) : MaxPool2dImpl(MaxPool2dOptions(kernel)) {}        // NOLINT
  Tensor forward(const Tensor& input) const;
  std::string extra_repr() const override;
  MaxPool2dOptions options;
};
XTEN_MODULE(MaxPool2d);

struct AvgPool2dOptions {
  AvgPool2dOptions(Pair kernel) : kernel_size_(kernel), stride_(kernel) {}  // NOLINT
  XTEN_ARG(Pair, kernel_size);
  XTEN_ARG(Pair, stride);
  XTEN_ARG(Pair, padding) = 0;
  XTEN_ARG(bool, ceil_mode) = false;
  XTEN_ARG(bool, count_include_pad) = true;
};
class AvgPool2dImpl : public Module {
 public:
  AvgPool2dImpl(const AvgPool2dOptions& o) : Module("AvgPool2d"), options(o) {}  // NOLINT
  AvgPool2dImpl(Pair kernel) : AvgPool2dImpl(AvgPool2dOptions(kernel)) {}        // NOLINT
  Tensor forward(const Tensor& input) const;
  std::string extra_repr() const override;
  AvgPool2dOptions options;
};
XTEN_MODULE(AvgPool2d);

class AdaptiveAvgPool2dImpl : public Module {
 public:
  AdaptiveAvgPool2dImpl(Pair output_size)
      : Module("AdaptiveAvgPool2d"), output_size(output_size) {}  // NOLINT
  Tensor forward(const Tensor& input) const {
    return adaptive_avg_pool2d(input, output_size.ref());
  }
  std::string extra_repr() const override;
  Pair output_size;
};
XTEN_MODULE(AdaptiveAvgPool2d);

class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& input) const { return flatten(input, start_dim, end_dim); }
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};
XTEN_MODULE(Flatten);

class EmbeddingImpl : public Module {
 public:
  // weight [num_embeddings, embedding_dim] from N(0, 1).
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) const { return embedding(weight, indices); }
  std::string extra_repr() const override;
  Tensor weight;
};
XTEN_MODULE(Embedding);

// ---- activations: modules over a function of the input ----------------------------------------
class FunctionalImpl : public Module {
 public:
  FunctionalImpl(std::string name, std::function<Tensor(const Tensor&)> f, std::string extra = "")
      : Module(std::move(name)), f_(std::move(f)), extra_(std::move(extra)) {}
  Tensor forward(const Tensor& input) const {
    if (interceptor()) return intercepted({input}, [this](const auto& in) { return f_(in[0]); });
    return f_(input);
  }
  std::string extra_repr() const override { return extra_; }

 private:
  std::function<Tensor(const Tensor&)> f_;
  std::string extra_;
};
#define XTEN_ACTIVATION(Name, ...)           \
  class Name##Impl : public FunctionalImpl { \
   public:                                   \
    __VA_ARGS__                              \
  };                                         \
  XTEN_MODULE(Name)
XTEN_ACTIVATION(Identity, IdentityImpl()
                : FunctionalImpl("Identity", [](const Tensor& x) { return x; }){});
XTEN_ACTIVATION(ReLU, ReLUImpl()
                : FunctionalImpl("ReLU", [](const Tensor& x) { return relu(x); }){});
XTEN_ACTIVATION(Tanh, TanhImpl()
                : FunctionalImpl("Tanh", [](const Tensor& x) { return tanh(x); }){});
XTEN_ACTIVATION(Sigmoid, SigmoidImpl()
                : FunctionalImpl("Sigmoid", [](const Tensor& x) { return sigmoid(x); }){});
XTEN_ACTIVATION(SiLU, SiLUImpl()
                : FunctionalImpl("SiLU", [](const Tensor& x) { return silu(x); }){});
XTEN_ACTIVATION(Hardswish, HardswishImpl()
                : FunctionalImpl("Hardswish", [](const Tensor& x) { return hardswish(x); }){});
XTEN_ACTIVATION(GELU, explicit GELUImpl(std::string approximate = "none"););
XTEN_ACTIVATION(LeakyReLU, explicit LeakyReLUImpl(double negative_slope = 0.01););
XTEN_ACTIVATION(ELU, explicit ELUImpl(double alpha = 1.0););
XTEN_ACTIVATION(Softplus, explicit SoftplusImpl(double beta = 1.0, double threshold = 20.0););
XTEN_ACTIVATION(Softmax, explicit SoftmaxImpl(int64_t dim););
XTEN_ACTIVATION(LogSoftmax, explicit LogSoftmaxImpl(int64_t dim););
#undef XTEN_ACTIVATION

// a + b as a module: a residual connection that quantization can observe and replace by a
// quantized add (models::BasicBlock; docs/quantization.md). Unobserved, it is add(a, b).
class AddImpl : public Module {
 public:
  AddImpl();
  Tensor forward(const Tensor& a, const Tensor& b) const;
};
XTEN_MODULE(Add);

// ---- containers ---------------------------------------------------------------------------------
// Runs its modules in order, each one's output the next one's input. Children are named "0",
// "1", ... as in PyTorch.
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <class... Holders>
  explicit SequentialImpl(Holders&&... modules) : Module("Sequential") {
    (push_back(std::forward<Holders>(modules)), ...);
  }
  template <class Holder>
  void push_back(Holder holder) {
    auto impl = holder.ptr();
    register_module(std::to_string(steps_.size()), impl);
    steps_.push_back({impl, [impl](const Tensor& x) { return impl->forward(x); }});
  }
  // Note [Linear -> ReLU]: a Linear followed by a ReLU runs as one _linear_relu (the same
  // values; on the CPU one oneDNN product applies the bias and the relu: docs/nn.md).
  Tensor forward(const Tensor& input) const;
  size_t size() const { return steps_.size(); }
  std::shared_ptr<Module> operator[](size_t i) const;

 private:
  struct Step {
    std::shared_ptr<Module> module;
    std::function<Tensor(const Tensor&)> run;
  };
  std::vector<Step> steps_;
};
XTEN_MODULE(Sequential);

// Holds modules by index (no forward of its own).
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  template <class Holder>
  void push_back(Holder holder) {
    register_module(std::to_string(items_.size()), holder.ptr());
    items_.push_back(holder.ptr());
  }
  size_t size() const { return items_.size(); }
  std::shared_ptr<Module> operator[](size_t i) const;

 private:
  std::vector<std::shared_ptr<Module>> items_;
};
XTEN_MODULE(ModuleList);

// Holds modules by name, in insertion order (no forward of its own).
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() : Module("ModuleDict") {}
  template <class Holder>
  void insert(const std::string& key, Holder holder) {
    register_module(key, holder.ptr());
  }
  std::shared_ptr<Module> operator[](const std::string& key) const;
  bool contains(const std::string& key) const;
  size_t size() const { return named_children().size(); }
};
XTEN_MODULE(ModuleDict);

// ---- losses -------------------------------------------------------------------------------------
// forward(input, target) over the functional losses, with PyTorch's options.
struct CrossEntropyLossOptions {
  XTEN_ARG(std::optional<Tensor>, weight);
  XTEN_ARG(std::string, reduction) = "mean";
  XTEN_ARG(int64_t, ignore_index) = -100;
  XTEN_ARG(double, label_smoothing) = 0.0;
};
class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(CrossEntropyLossOptions o = {})
      : Module("CrossEntropyLoss"), options(std::move(o)) {}
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return cross_entropy(input, target, options.weight(), options.reduction(),
                         options.ignore_index(), options.label_smoothing());
  }
  CrossEntropyLossOptions options;
};
XTEN_MODULE(CrossEntropyLoss);

class NLLLossImpl : public Module {
 public:
  explicit NLLLossImpl(std::string reduction = "mean", int64_t ignore_index = -100,
                       std::optional<Tensor> weight = std::nullopt)
      : Module("NLLLoss"),
        reduction(std::move(reduction)),
        ignore_index(ignore_index),
        weight(std::move(weight)) {}
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return nll_loss(input, target, weight, reduction, ignore_index);
  }
  std::string reduction;
  int64_t ignore_index;
  std::optional<Tensor> weight;
};
XTEN_MODULE(NLLLoss);

// Losses with only a reduction (and one number): MSELoss, L1Loss, SmoothL1Loss(beta), BCELoss,
// BCEWithLogitsLoss, KLDivLoss(log_target).
#define XTEN_LOSS(Name, call, ...)                                                   \
  class Name##Impl : public Module {                                                 \
   public:                                                                           \
    explicit Name##Impl(std::string reduction = "mean" __VA_ARGS__)                  \
        : Module(#Name), reduction(std::move(reduction)) {}                          \
    Tensor forward(const Tensor& input, const Tensor& target) const { return call; } \
    std::string reduction;                                                           \
  };                                                                                 \
  XTEN_MODULE(Name)
XTEN_LOSS(MSELoss, mse_loss(input, target, reduction));
XTEN_LOSS(L1Loss, l1_loss(input, target, reduction));
XTEN_LOSS(BCELoss, binary_cross_entropy(input, target, std::nullopt, reduction));
XTEN_LOSS(BCEWithLogitsLoss,
          binary_cross_entropy_with_logits(input, target, std::nullopt, std::nullopt, reduction));
#undef XTEN_LOSS

class SmoothL1LossImpl : public Module {
 public:
  explicit SmoothL1LossImpl(std::string reduction = "mean", double beta = 1.0)
      : Module("SmoothL1Loss"), reduction(std::move(reduction)), beta(beta) {}
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return smooth_l1_loss(input, target, reduction, beta);
  }
  std::string reduction;
  double beta;
};
XTEN_MODULE(SmoothL1Loss);

class KLDivLossImpl : public Module {
 public:
  explicit KLDivLossImpl(std::string reduction = "mean", bool log_target = false)
      : Module("KLDivLoss"), reduction(std::move(reduction)), log_target(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return kl_div(input, target, reduction, log_target);
  }
  std::string reduction;
  bool log_target;
};
XTEN_MODULE(KLDivLoss);

}  // namespace xten::nn
