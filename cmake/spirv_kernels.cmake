# Included from the top CMakeLists.txt (custom commands must live in the directory of the
# target that compiles their outputs).
# OpenCL C kernel sources -> SPIR-V -> C++ arrays in libxten (docs/xpu_kernels.md). Each
# family file is compiled twice: without float64 (module "<family>") and with only its
# float64 variants (module "<family>_f64"), so that a device without fp64 never sees double.
# The families in XTEN_SPIRV_SPLIT_FAMILIES, whose modules are large (every dtype x op x
# variant), are compiled three times: 16/32-bit floats ("<family>"), integers and bool
# ("<family>_int"), float64 ("<family>_f64"); a module's warm build time grows with its size
# (bench/README.md, bench_first_use).
# Note [Lightly optimized SPIR-V]: clang's -O1/-O2 pipelines make control flow that
# llvm-spirv-15 mistranslates (blocks before their dominators, uses before definitions, which
# spirv-val rejects; `freeze`, which it cannot translate), and unoptimized code (every value
# in a stack slot) runs ~80x slower on PoCL. So clang emits -O0 code without optnone and
# opt-15 runs a short pipeline (scalar replacement, CSE, instcombine, CFG simplification)
# that translates cleanly; the device compiler (PoCL's LLVM, Intel's IGC) does the rest.
# -ffp-contract=off keeps a*b+c two roundings, as on the CPU.
find_program(XTEN_CLANG15 clang-15 REQUIRED)
find_program(XTEN_LLVM_SPIRV llvm-spirv-15 REQUIRED)
find_program(XTEN_OPT15 opt-15 REQUIRED)
find_program(XTEN_SPIRV_VAL spirv-val REQUIRED)

file(GLOB XTEN_SPIRV_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/xpu/spirv/*.cl)
set(out_dir ${PROJECT_BINARY_DIR}/spirv)
file(MAKE_DIRECTORY ${out_dir})
set(XTEN_SPIRV_SPLIT_FAMILIES binary unary reduce)
set(XTEN_SPIRV_CPP "")
foreach(src ${XTEN_SPIRV_SOURCES})
  get_filename_component(family ${src} NAME_WE)
  set(variants "" "_f64")
  if(family IN_LIST XTEN_SPIRV_SPLIT_FAMILIES)
    set(variants "" "_int" "_f64")
  endif()
  foreach(variant IN LISTS variants)
    set(name ${family}${variant})
    set(defs "")
    if(variant STREQUAL "_f64")
      set(defs -DXTEN_F64)
    elseif(variant STREQUAL "_int")
      set(defs -DXTEN_INT_MODULE)
    elseif(family IN_LIST XTEN_SPIRV_SPLIT_FAMILIES)
      set(defs -DXTEN_FLOAT_MODULE)
    endif()
    add_custom_command(
      OUTPUT ${out_dir}/${name}.spv
      COMMAND ${XTEN_CLANG15} -target spir64 -cl-std=CL1.2 -O0 -Xclang -disable-O0-optnone
              -ffp-contract=off -Werror ${defs}
              -c -emit-llvm ${src} -o ${out_dir}/${name}.O0.bc
      COMMAND ${XTEN_OPT15} -passes=sroa,early-cse,instcombine,simplifycfg ${out_dir}/${name}.O0.bc
              -o ${out_dir}/${name}.bc
      COMMAND ${XTEN_LLVM_SPIRV} ${out_dir}/${name}.bc -o ${out_dir}/${name}.spv
      COMMAND ${XTEN_SPIRV_VAL} ${out_dir}/${name}.spv
      DEPENDS ${src} ${PROJECT_SOURCE_DIR}/kernels/xpu/spirv/common.h
              ${PROJECT_SOURCE_DIR}/kernels/common/box_muller.inc
      COMMENT "SPIR-V module ${name}"
      VERBATIM)
    add_custom_command(
      OUTPUT ${out_dir}/spirv_${name}.cpp
      COMMAND ${CMAKE_COMMAND} -DIN=${out_dir}/${name}.spv -DOUT=${out_dir}/spirv_${name}.cpp
              -DFAMILY=${name} -P ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
      DEPENDS ${out_dir}/${name}.spv ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
      VERBATIM)
    list(APPEND XTEN_SPIRV_CPP ${out_dir}/spirv_${name}.cpp)
  endforeach()
endforeach()
