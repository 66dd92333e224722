// Op definitions (TF_OpDefinitionBuilder) and shape functions of the Horovod
// ops, with upstream's op names. Differences from upstream's definitions:
// every collective takes a last `tensor_name` input (a scalar string; "" =
// use the node name, as upstream does in graph mode), so eager calls with
// different names reuse one cached kernel; grouped ops take a type list, so
// a group may mix dtypes; every collective, join and barrier have a `blocking` attr (default
// false; the Python wrappers set it in eager mode: the kernel then waits for
// its ops on the calling thread, NOTE [Blocking kernels in eager mode] in
// async_op.cc; one eager kernel-cache entry per value).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels.h"
#include "tf_c_api.h"

namespace hvda_tf {
namespace {

// Upstream accepts {uint8, int8, int32, int64, float16, float32, float64} for
// allreduce (reducescatter: from int32 on) and adds uint16, int16 and bool
// for allgather, broadcast and alltoall. We accept every type the core
// reduces (upstream's plus uint16, int16, bfloat16) and, for data movement,
// those plus bool.
const char* kReduceTypes =
    "{uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double}";
const char* kAllTypes =
    "{uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}";

// Output i has input i's shape, for every input but the last (the name).
void SameShapes(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  const int64_t n = TF_ShapeInferenceContextNumInputs(ctx) - 1;
  TF_ShapeHandle* h = TF_NewShapeHandle();
  for (int i = 0; i < n && TF_GetCode(status) == TF_OK; ++i) {
    TF_ShapeInferenceContextGetInput(ctx, i, h, status);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, i, h, status);
  }
  TF_DeleteShapeHandle(h);
}

// Output i: input i's shape with an unknown first dimension (allgather,
// reducescatter, alltoall: it depends on the other ranks). Inputs counted:
// all but the last `trailing` (splits, name).
void FirstDimUnknown(TF_ShapeInferenceContext* ctx, TF_Status* status, int64_t n) {
  TF_ShapeHandle* in = TF_NewShapeHandle();
  TF_ShapeHandle* rest = TF_NewShapeHandle();
  TF_ShapeHandle* out = TF_NewShapeHandle();
  for (int i = 0; i < n && TF_GetCode(status) == TF_OK; ++i) {
    TF_ShapeInferenceContextGetInput(ctx, i, in, status);
    if (TF_GetCode(status) != TF_OK) break;
    if (!TF_ShapeInferenceContextRankKnown(ctx, in)) {
      TF_ShapeInferenceContextSetOutput(ctx, i, in, status);
      continue;
    }
    TF_ShapeInferenceContextWithRankAtLeast(ctx, in, 1, in, status);
    if (TF_GetCode(status) != TF_OK) break;
    TF_ShapeInferenceContextSubshape(ctx, in, 1, INT64_MAX, rest, status);
    if (TF_GetCode(status) != TF_OK) break;
    // VectorFromSize(-1 as size_t) is a vector of one unknown dimension
    // (InferenceContext::kUnknownDim == -1).
    TF_ShapeHandle* first = TF_ShapeInferenceContextVectorFromSize(ctx, static_cast<size_t>(-1));
    TF_ShapeInferenceContextConcatenateShapes(ctx, first, rest, out, status);
    TF_DeleteShapeHandle(first);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, i, out, status);
  }
  TF_DeleteShapeHandle(in);
  TF_DeleteShapeHandle(rest);
  TF_DeleteShapeHandle(out);
}

void GatherShapes(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  FirstDimUnknown(ctx, status, TF_ShapeInferenceContextNumInputs(ctx) - 1);
}

void AlltoallShapes(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  FirstDimUnknown(ctx, status, 1);
  if (TF_GetCode(status) != TF_OK) return;
  TF_ShapeHandle* v = TF_ShapeInferenceContextVectorFromSize(ctx, static_cast<size_t>(-1));
  TF_ShapeInferenceContextSetOutput(ctx, 1, v, status);
  TF_DeleteShapeHandle(v);
}

void ScalarShape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  TF_ShapeHandle* s = TF_ShapeInferenceContextScalar(ctx);
  TF_ShapeInferenceContextSetOutput(ctx, 0, s, status);
  TF_DeleteShapeHandle(s);
}

void NoOutputs(TF_ShapeInferenceContext*, TF_Status*) {}

struct Def {
  const char* name;
  std::vector<std::string> inputs, outputs, attrs;
  void (*shape)(TF_ShapeInferenceContext*, TF_Status*);
  bool stateful = false;
};

void Register(const Def& d, TF_Status* status) {
  if (TF_GetCode(status) != TF_OK) return;
  TF_OpDefinitionBuilder* b = TF_NewOpDefinitionBuilder(d.name);
  for (const auto& s : d.inputs) TF_OpDefinitionBuilderAddInput(b, s.c_str());
  for (const auto& s : d.outputs) TF_OpDefinitionBuilderAddOutput(b, s.c_str());
  for (const auto& s : d.attrs) TF_OpDefinitionBuilderAddAttr(b, s.c_str());
  TF_OpDefinitionBuilderSetShapeInferenceFunction(b, d.shape);
  if (d.stateful) TF_OpDefinitionBuilderSetIsStateful(b, true);
  TF_RegisterOpDefinition(b, status);  // takes ownership of b
}

std::string T(const char* types) { return std::string("T: ") + types; }
std::string TList(const char* types) { return std::string("T: list(") + types + ") >= 1"; }

}  // namespace

void RegisterOpDefs(TF_Status* status) {
  const std::string name_in = "tensor_name: string";
  const std::string scope = "ignore_name_scope: bool = false";
  const std::string ps = "process_set_id: int = 0";
  const std::string blocking = "blocking: bool = false";
  const std::vector<std::string> reduce_attrs = {"reduce_op: int", "prescale_factor: float",
                                                 "postscale_factor: float", scope, ps, blocking};
  auto with = [](std::vector<std::string> v, std::string first) {
    v.insert(v.begin(), std::move(first));
    return v;
  };
  const Def defs[] = {
      {"HorovodAllreduce", {"tensor: T", name_in}, {"sum: T"}, with(reduce_attrs, T(kReduceTypes)),
       &SameShapes},
      {"HorovodGroupedAllreduce", {"tensors: T", name_in}, {"sum: T"},
       with(reduce_attrs, TList(kReduceTypes)), &SameShapes},
      {"HorovodReducescatter", {"tensor: T", name_in}, {"output: T"},
       with(reduce_attrs, T(kReduceTypes)), &GatherShapes},
      {"HorovodGroupedReducescatter", {"tensors: T", name_in}, {"output: T"},
       with(reduce_attrs, TList(kReduceTypes)), &GatherShapes},
      {"HorovodAllgather", {"tensor: T", name_in}, {"output: T"},
       {T(kAllTypes), scope, ps, blocking}, &GatherShapes},
      {"HorovodGroupedAllgather", {"tensors: T", name_in}, {"output: T"},
       {TList(kAllTypes), scope, ps, blocking}, &GatherShapes},
      {"HorovodBroadcast", {"tensor: T", name_in}, {"output: T"},
       {T(kAllTypes), "root_rank: int", scope, ps, blocking}, &SameShapes},
      {"HorovodAlltoall", {"tensor: T", "splits: int32", name_in},
       {"output: T", "received_splits: int32"}, {T(kAllTypes), scope, ps, blocking},
       &AlltoallShapes},
      {"HorovodJoin", {}, {"output: int32"}, {blocking}, &ScalarShape, true},
      {"HorovodBarrier", {}, {}, {ps, blocking}, &NoOutputs, true},
      {"HorovodSize", {}, {"size: int32"}, {ps}, &ScalarShape, true},
      {"HorovodLocalSize", {}, {"local_size: int32"}, {}, &ScalarShape, true},
      {"HorovodRank", {}, {"rank: int32"}, {}, &ScalarShape, true},
      {"HorovodLocalRank", {}, {"local_rank: int32"}, {}, &ScalarShape, true},
      {"HorovodProcessSetIncluded", {}, {"included: int32"}, {ps}, &ScalarShape, true},
  };
  for (const Def& d : defs) Register(d, status);
}

}  // namespace hvda_tf
