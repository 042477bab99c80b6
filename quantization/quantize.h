#pragma once
// Post-training quantization of a model (docs/quantization.md):
//
//   model->eval();
//   quantization::prepare(model, example_batch);        // fold batch norms, insert observers
//   for (auto& batch : calibration) model(batch.data);   // observers record ranges
//   quantization::convert(model);                        // int8 weights, quantized forward
//   Tensor logits = model(images);                       // float32 in, float32 out
//
// or, for models whose time goes into Linear layers (transformers):
//
//   quantization::quantize_dynamic(model);               // int8 weights, inputs per call
//
// Models keep their modules (the model's code does not change): what a module computes is
// replaced through its interceptor (Note [Forward interception] in nn/module.h). Between
// quantized layers activations stay quantized; the ops between them (relu, max_pool2d,
// adaptive_avg_pool2d, flatten, views) take quantized tensors directly; the first layer
// quantizes its float input and the layer that makes the model's output dequantizes it.
#include <functional>

#include <xten/nn/module.h>
#include <xten/quantization/observer.h>

namespace xten::quantization {

enum class ActivationObserver { MinMax, MovingAverageMinMax, Histogram };

// How a model is quantized: quint8 activations through the chosen observer, qint8 weights,
// symmetric, per output channel or per tensor.
struct QConfig {
  ActivationObserver activation = ActivationObserver::Histogram;
  // One bit less for activations (uint8 [0, 127]): without VNNI the int8 products add pairs of
  // products in int16, which saturates otherwise ("Saturation"). PyTorch's x86 default too.
  bool reduce_range = true;
  bool per_channel_weights = true;
};
// PyTorch's get_default_qconfig("x86"): histogram activations with reduce_range, per-channel
// weights.
QConfig default_qconfig();

// Runs `run` (the model's forward on example data, in eval mode, returning its output) once to
// see which modules feed which: a BatchNorm2d right after a Conv2d is folded into it, a ReLU
// right after a Conv2d / Linear (or its folded batch norm) is fused with it, and the module that
// makes the output is remembered. Then every Conv2d, Linear and Add observes its input and
// output in later forwards. Errors: a model in training mode; no layer to quantize.
void prepare(nn::Module& model, const std::function<Tensor()>& run,
             const QConfig& qconfig = default_qconfig());
template <class Holder, class = decltype(std::declval<Holder&>().ptr())>
void prepare(Holder& model, const Tensor& example, const QConfig& qconfig = default_qconfig()) {
  prepare(
      *model.ptr(), [&] { return model(example); }, qconfig);
}

// Replaces the observed layers by quantized ones (weights quantized by a per-channel or
// per-tensor MinMax observer; activations with what their observers chose). Errors: a model
// that was not prepared, a layer whose observers saw no data.
void convert(nn::Module& model);
template <class Holder, class = decltype(std::declval<Holder&>().ptr())>
void convert(Holder& model) {
  convert(*model.ptr());
}

// Every Linear of the model computes with int8 weights (per output channel, symmetric) and an
// input quantized from its own range on every call (quantized::linear_dynamic); float32 out.
// Returns how many layers were quantized.
int64_t quantize_dynamic(nn::Module& model);
template <class Holder, class = decltype(std::declval<Holder&>().ptr())>
int64_t quantize_dynamic(Holder& model) {
  return quantize_dynamic(*model.ptr());
}

// Removes what prepare / convert / quantize_dynamic installed: the model computes in float again
// (its parameters were never changed).
void dequantize_model(nn::Module& model);

}  // namespace xten::quantization
