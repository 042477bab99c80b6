#pragma once
// xten: the whole public API. `#include <xten/xten.h>`, link xten::xten.
#include <xten/autocast/autocast.h>
#include <xten/autograd/autograd.h>
#include <xten/core/device.h>
#include <xten/core/error.h>
#include <xten/core/generator.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/core/scalar.h>
#include <xten/core/scalar_type.h>
#include <xten/core/tensor.h>
#include <xten/core/tensor_options.h>
#include <xten/dispatch/dispatcher.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/local_dispatch_key_set.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/xpu/runtime/xpu.h>
