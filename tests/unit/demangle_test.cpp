#include <catch2/catch.hpp>

#include "sprof/demangle.hpp"

using sprof::demangled_symbol;

TEST_CASE("demangle: mangled kernel names read as C++, others stay as they are", "[demangle]") {
  CHECK(demangled_symbol("_Z3addPfS_i") == "add(float*, float*, int)");
  CHECK(demangled_symbol("_ZN7cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE") ==
        "void cutlass::Kernel<cutlass::gemm::kernel::Gemm>(cutlass::gemm::kernel::Gemm::Params)");
  // Not mangled: an extern "C" or Triton kernel; "i" would read as the type int.
  CHECK(demangled_symbol("triton_poi_fused_add_0") == "triton_poi_fused_add_0");
  CHECK(demangled_symbol("i") == "i");
  CHECK(demangled_symbol("") == "");
  // Neither demangler reads it: kept.
  CHECK(demangled_symbol("_Z!!") == "_Z!!");
  // GNU's __cxa_demangle (and c++filt) refuse this cutlass kernel's name, from the vendored nccl
  // trace (third_party/kineto-traces); LLVM's demangler reads it.
  const char* refused_by_gnu =
      "_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22Impl"
      "icitGemmMultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52Conv2dWgradOutputGradientTileAcce"
      "ssIteratorOptimizedINS_11MatrixShapeILi128ELi32EEENS_10tfloat32_tENS_9transform29PitchLinearWarp"
      "RakedThreadMapINS_16PitchLinearShapeILi128ELi32EEELi128ENSF_ILi8ELi4EEELi4EEENS_12AlignedArrayIS"
      "C_Li4ELi16EEEEENSD_11threadblock25RegularTileAccessIteratorISB_SC_NS_6layout40ColumnMajorTensorO"
      "pMultiplicandCongruousILi32ELi32EEELi1ESI_Li16EEELNS_4arch14CacheOperation4KindE0ENS4_48Conv2dWg"
      "radActivationTileAccessIteratorOptimizedINSA_ILi32ELi128EEESC_SI_SK_EENSN_ISW_SC_NSO_37RowMajorT"
      "ensorOpMultiplicandCongruousILi32ELi32EEELi0ESI_Li16EEELSU_0ENS6_11threadblock9MmaPolicyINS6_4wa"
      "rp11MmaTensorOpINS7_ILi64ELi64ELi32EEESC_SQ_SC_SZ_fNSO_8RowMajorENS13_17MmaTensorOpPolicyINSS_3M"
      "maINS7_ILi16ELi8ELi8EEELi32ESC_S16_SC_NSO_11ColumnMajorEfS16_NSS_13OpMultiplyAddEEENSA_ILi1ELi1E"
      "EEEELi1ELb0EbEENSA_ILi0ELi0EEES1G_Li1EEELi4EbEENS_8epilogue11threadblock8EpilogueIS8_S1F_Li1ENS1"
      "K_22PredicatedTileIteratorINS1K_26OutputTileOptimalThreadMapINS1K_15OutputTileShapeILi128ELi8ELi"
      "2ELi1ELi1EEENS1O_ILi1ELi8ELi1ELi1ELi8EEELi128ELi4ELi32EEEfLb0ENSO_9NoPermuteELb0EEENS1J_4warp24F"
      "ragmentIteratorTensorOpIS15_S19_fNS_5ArrayIfLi4ELb1EEES16_EENS1U_20TileIteratorTensorOpIS15_S19_"
      "fS16_EENS1K_18SharedLoadIteratorINS1R_18CompactedThreadMapEfLi16EEENS1J_6thread17LinearCombinati"
      "onIfLi4EffLNS24_9ScaleType4KindE0ELNS_15FloatRoundStyleE2EEENSA_ILi0ELi8EEELi2ELi1EEENS11_30Gemm"
      "IdentityThreadblockSwizzleILi4EEELNS1_8OperatorE2ENS1_17Conv2dProblemSizeELNS1_9GroupModeE0EEEEE"
      "vNT_6ParamsE";
  std::string readable = demangled_symbol(refused_by_gnu);
  CHECK(readable.rfind("void cutlass_cudnn_train::Kernel<cutlass_cudnn_train::conv::kernel::ImplicitGemmConvolution<", 0) == 0);
}
