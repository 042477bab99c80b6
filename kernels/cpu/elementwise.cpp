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

  if (out_.defined()) {
    check_elementwise_out(op_, out_, shape_, result_);
    target_ = out_.dtype() == result_ ? out_ : empty_tensor(shape_, result_, out_.device());
  } else {
    const Device device = num_inputs_ ? inputs_[0].device() : Device(kCPU);
    out_ = target_ = empty_tensor(shape_, result_, device);
  }

  // Bring inputs to the compute dtype.
  for (int i = 0; i < num_inputs_; ++i) {
    Tensor& in = inputs_[i];
    if (keep_dtype_[i] || in.dtype() == compute_) continue;
    if (in.numel() == 1) {
      convert_element(in.data_ptr(), in.dtype(), scalar_buf_[i + 1].data(), compute_);
      continue;  // geometry reads scalar_buf_ for it
    }
    Tensor converted = empty_tensor(in.sizes(), compute_, in.device());
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
  // Coalesce: drop size-1 dims; merge a dim into its outer neighbour when every operand
  // steps over the inner dim exactly to the outer one.
  dims_ = DimVector();
  for (int o = 0; o < nops; ++o) strides_[o] = DimVector();
  for (int d = 0; d < nd; ++d) {
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
