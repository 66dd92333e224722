#include "kernel_config.h"

#include "tf_c_api.h"

namespace hvda_tf {

void* CreateKernelConfig(TF_OpKernelConstruction* ctx) {
  auto* k = new KernelConfig;
  TF_StringView n = TF_OpKernelConstruction_GetName(ctx);
  k->node_name.assign(n.data, n.len);
  k->ignore_name_scope = AttrBool(ctx, "ignore_name_scope", false);
  k->process_set_id = static_cast<int32_t>(AttrInt(ctx, "process_set_id", 0));
  k->reduce_op = static_cast<int32_t>(AttrInt(ctx, "reduce_op", 1));
  k->prescale = AttrFloat(ctx, "prescale_factor", 1.0f);
  k->postscale = AttrFloat(ctx, "postscale_factor", 1.0f);
  k->root_rank = static_cast<int32_t>(AttrInt(ctx, "root_rank", 0));
  k->blocking = AttrBool(ctx, "blocking", false);
  return k;
}

void* CreateDeviceKernelConfig(TF_OpKernelConstruction* ctx) {
  auto* k = static_cast<KernelConfig*>(CreateKernelConfig(ctx));
  k->on_device = true;
  return k;
}

void DeleteKernelConfig(void* kernel) { delete static_cast<KernelConfig*>(kernel); }

bool CoreName(AsyncOp* op, const KernelConfig& k, int index, std::string* name) {
  TF_Tensor* t = op->Input(index);
  if (t == nullptr) return false;
  if (TF_TensorType(t) != TF_STRING || TF_NumDims(t) != 0) {
    op->Fail(TF_INVALID_ARGUMENT, "the tensor_name input of '" + k.node_name +
                                      "' must be a scalar string");
    return false;
  }
  *name = ReadTString(TF_TensorData(t));
  if (name->empty()) {
    *name = k.node_name;
    if (k.ignore_name_scope) {
      size_t slash = name->rfind('/');
      if (slash != std::string::npos) name->erase(0, slash + 1);
    }
  }
  return true;
}

std::string GroupName(const std::string& base, int i, int n) {
  return base + "_" + std::to_string(i + 1) + "of" + std::to_string(n);
}

hvda_core_op MakeOp(const KernelConfig& k, int32_t type, const std::string& name, TF_Tensor* in,
                    const std::vector<int64_t>& dims) {
  hvda_core_op o{};
  o.struct_size = sizeof(o);
  o.type = type;
  o.name = name.c_str();
  o.process_set_id = k.process_set_id;
  o.input = TF_TensorData(in);
  o.dtype = CoreDtype(TF_TensorType(in));
  o.shape = dims.data();
  o.ndim = static_cast<int32_t>(dims.size());
  o.reduce_op = k.reduce_op;
  o.prescale = k.prescale;
  o.postscale = k.postscale;
  o.root_rank = k.root_rank;
  return o;
}

bool CheckDtype(AsyncOp* op, TF_Tensor* t, const std::string& name) {
  if (CoreDtype(TF_TensorType(t)) >= 0) return true;
  op->Fail(TF_INVALID_ARGUMENT, "tensor '" + name + "' has a dtype Horovod does not support (" +
                                    TfDtypeName(TF_TensorType(t)) + ")");
  return false;
}

}  // namespace hvda_tf
