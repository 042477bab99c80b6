#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/xpu/ops/elementwise.h>

#include <xten/core/meta.h>
#include <xten/dispatch/ops.h>

namespace xten::xpu {

Elementwise::Elementwise(const char* op, const Tensor& out, std::vector<Tensor> inputs,
                         std::optional<ScalarType> compute, std::optional<ScalarType> result,
                         uint32_t keep)
    : op_(op), out_(out), inputs_(std::move(inputs)) {
  XTEN_ASSERT(!inputs_.empty() && inputs_.size() <= 3);
  for (size_t i = 0; i < inputs_.size(); ++i)
    XTEN_CHECK(inputs_[i].defined(), ValueError, op_, "input {} is an undefined tensor", i);
  if (compute) {
    compute_ = *compute;
  } else {
    ResultType rt;
    for (const Tensor& t : inputs_) rt.add(t);
    compute_ = rt.get();
  }
  result_ = result ? *result : compute_;
  check_same_device(op_, {&out_, &inputs_[0], inputs_.size() > 1 ? &inputs_[1] : nullptr,
                          inputs_.size() > 2 ? &inputs_[2] : nullptr});

  shape_ = out_.defined() ? DimVector(out_.sizes()) : DimVector(inputs_[0].sizes());
  for (const Tensor& t : inputs_)
    if (t.sizes() != IntArrayRef(shape_)) shape_ = broadcast_shapes(op_, shape_, t.sizes());

  // The device: the output's, else the first input on an XPU.
  Device device = out_.defined() ? out_.device() : Device(kCPU);
  for (const Tensor& t : inputs_)
    if (device.type() != kXPU && t.device().type() == kXPU) device = t.device();
  XTEN_CHECK(device.type() == kXPU, DeviceError, op_,
             "an XPU kernel got no XPU tensor (inputs on {})", inputs_[0].device().str());

  // The layout of the result and the order of the walk (Note [Pointwise layout], core/meta.h).
  const Tensor* in1 = inputs_.size() > 1 ? &inputs_[1] : nullptr;
  const Tensor* in2 = inputs_.size() > 2 ? &inputs_[2] : nullptr;
  if (!all_contiguous({&out_, &inputs_[0], in1, in2}))
    order_ = pointwise_dim_order(shape_, {&out_, &inputs_[0], in1, in2});
  auto fresh = [&](ScalarType dtype, Device d) {
    Tensor t = empty(shape_, dtype, d);
    return order_.empty() ? t : restride_fresh(t, dense_strides(shape_, order_));
  };
  if (out_.defined()) {
    check_elementwise_out(op_, out_, shape_, result_);
    target_ = out_.dtype() == result_ ? out_ : fresh(result_, out_.device());
  } else {
    out_ = target_ = fresh(result_, device);
  }
  // Inputs on the device in the compute dtype. CPU 0-dim tensors (wrapped numbers among them,
  // which dispatch nowhere by themselves) become a device fill of their value.
  for (size_t i = 0; i < inputs_.size(); ++i) {
    Tensor& t = inputs_[i];
    const ScalarType want = (keep >> i) & 1 ? t.dtype() : compute_;
    if (t.device().type() != kXPU)
      t = full({}, t.item(), TensorOptions().dtype(want).device(device));
    if (t.dtype() != want) {
      Tensor c =
          empty(t.sizes(),
                TensorOptions(want).device(t.device()).memory_format(t.suggest_memory_format()));
      device_copy(c, t);
      t = c;
    }
  }
}

}  // namespace xten::xpu
