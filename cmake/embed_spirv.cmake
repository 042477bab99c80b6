# cmake -DIN=x.spv -DOUT=x.cpp -DFAMILY=name -P embed_spirv.cmake
# Writes a C++ file holding the SPIR-V module's bytes and registering it with the XPU
# runtime's module cache under FAMILY (kernels/xpu/runtime/module_cache.h).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" body "${body}")
file(WRITE ${OUT} "// Generated from ${FAMILY}.spv by cmake/embed_spirv.cmake; do not edit.
#include <xten/kernels/xpu/runtime/module_cache.h>
namespace {
alignas(4) const unsigned char kSpirv[${bytes}] = {
${body}};
const bool kRegistered = xten::xpu::register_spirv_module(\"${FAMILY}\", kSpirv, sizeof(kSpirv));
}  // namespace
")
