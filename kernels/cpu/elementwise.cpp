#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/elementwise.h>

namespace xten::cpu {

Elementwise::Elementwise(const char* op, const Tensor& out, std::initializer_list<Tensor> inputs)
    : op_(op), out_(out) {
  XTEN_ASSERT(inputs.size() < kMaxOperands, "{} inputs", inputs.size());
  for (const Tensor& t : inputs) {
    XTEN_CHECK(t.defined(), ValueError, op_, "input {} is an undefined tensor", num_inputs_);
    inputs_[num_inputs_++] = t;
  }
}

void Elementwise::prepare() {
  XTEN_ASSERT(!prepared_);
  prepared_ = true;
  if (compute_ == ScalarType::Undefined) {
    ResultType rt;
    for (int i = 0; i < num_inputs_; ++i) rt.add(inputs_[i]);
    compute_ = rt.get();
  }
  if (result_ == ScalarType::Undefined) result_ = compute_;

  std::array<const Tensor*, kMaxOperands> all{&out_};
  for (int i = 0; i < num_inputs_; ++i) all[i + 1] = &inputs_[i];
  check_same_device(op_, {all[0], all[1], all[2], all[3]});

  // A given output takes part in broadcasting (copy_ broadcasts its source to it), and must
  // then have the broadcast shape itself (checked below).
  shape_ = out_.defined() ? DimVector(out_.sizes()) : DimVector(inputs_[0].sizes());
  for (int i = 0; i < num_inputs_; ++i)
    if (inputs_[i].sizes() != IntArrayRef(shape_))
      shape_ = broadcast_shapes(op_, shape_, inputs_[i].sizes());
  numel_ = 1;
  for (int64_t s : shape_) numel_ *= s;

  // The layout of the result and the order of the walk (Note [Pointwise layout]).
  if (!all_contiguous({all[0], all[1], all[2], all[3]}))
    order_ = pointwise_dim_order(shape_, {all[0], all[1], all[2], all[3]});
  auto fresh = [&](IntArrayRef shape, const DimVector& order, ScalarType dtype, Device device) {
    return order.empty() ? empty_tensor(shape, dtype, device)
                         : empty_tensor(shape, dense_strides(shape, order), dtype, device);
  };
  if (out_.defined()) {
    check_elementwise_out(op_, out_, shape_, result_);
    target_ = out_.dtype() == result_ ? out_ : fresh(shape_, order_, result_, out_.device());
  } else {
    const Device device = num_inputs_ ? inputs_[0].device() : Device(kCPU);
    out_ = target_ = fresh(shape_, order_, result_, device);
  }

  // Bring inputs to the compute dtype (each in its own layout).
  for (int i = 0; i < num_inputs_; ++i) {
    Tensor& in = inputs_[i];
    if (keep_dtype_[i] || in.dtype() == compute_) continue;
    if (in.numel() == 1) {
      convert_element(in.data_ptr(), in.dtype(), scalar_buf_[i + 1].data(), compute_);
      continue;  // geometry reads scalar_buf_ for it
    }
    const DimVector own = in.is_contiguous() ? DimVector() : pointwise_dim_order(in.sizes(), {&in});
    Tensor converted = fresh(in.sizes(), own, compute_, in.device());
    copy_into(op_, converted, in);
    in = converted;
  }
  build_geometry();
}

Elementwise::Operand Elementwise::operand(int o) {
  const Tensor& t = o == 0 ? target_ : inputs_[o - 1];
  // A one-element input whose dtype is not the compute dtype was converted into scalar_buf_.
  const bool buffered = o > 0 && !keep_dtype_[o - 1] && t.dtype() != compute_;
  const ScalarType dtype = o == 0 ? result_ : keep_dtype_[o - 1] ? t.dtype() : compute_;
  return {&t, buffered, static_cast<int64_t>(element_size(dtype)),
          buffered ? scalar_buf_[o].data() : static_cast<char*>(t.data_ptr())};
}

void Elementwise::build_geometry() {
  const int nd = static_cast<int>(shape_.size());
  const int nops = num_inputs_ + 1;
  if (flat_geometry()) return;
  std::array<DimVector, kMaxOperands> full;
  for (int o = 0; o < nops; ++o) {
    const Operand op = operand(o);
    data_[o] = op.data;
    full[o] = DimVector(nd, 0);
    if (op.buffered) continue;  // a converted one-element input: stride 0 everywhere
    const Tensor& t = *op.tensor;
    const int off = nd - static_cast<int>(t.dim());
    for (int d = 0; d < t.dim(); ++d)
      full[o][off + d] = t.size(d) == 1 ? 0 : t.stride(d) * op.esize;
  }
  // Coalesce, walking the dims in order_ (outermost first): drop size-1 dims; merge a dim into
  // its outer neighbour when every operand steps over the inner dim exactly to the outer one.
  dims_ = DimVector();
  for (int o = 0; o < nops; ++o) strides_[o] = DimVector();
  for (int i = 0; i < nd; ++i) {
    const int d = order_.empty() ? i : static_cast<int>(order_[i]);
    if (shape_[d] == 1) continue;
    bool merge = !dims_.empty();
    for (int o = 0; merge && o < nops; ++o) merge = strides_[o].back() == full[o][d] * shape_[d];
    if (merge) {
      dims_.back() *= shape_[d];
      for (int o = 0; o < nops; ++o) strides_[o].back() = full[o][d];
    } else {
      dims_.push_back(shape_[d]);
      for (int o = 0; o < nops; ++o) strides_[o].push_back(full[o][d]);
    }
  }
}

// The common case in one step: every operand is contiguous with the full shape, or a single
// element (stride 0). Then the whole op is one run of numel elements.
bool Elementwise::flat_geometry() {
  const int nops = num_inputs_ + 1;
  std::array<int64_t, kMaxOperands> stride{};
  for (int o = 0; o < nops; ++o) {
    const Operand op = operand(o);
    data_[o] = op.data;
    if (op.buffered || (op.tensor->numel() == 1 && numel_ != 1)) {
      stride[o] = 0;
      continue;
    }
    if (!op.tensor->is_contiguous() || op.tensor->numel() != numel_) return false;
    stride[o] = op.esize;
  }
  dims_.assign(1, numel_);
  for (int o = 0; o < nops; ++o) strides_[o].assign(1, stride[o]);
  return true;
}

Tensor Elementwise::finish() {
  if (!target_.is_same(out_)) copy_into(op_, out_, target_);
  return out_;
}

}  // namespace xten::cpu
