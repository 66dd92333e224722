// Small helpers over TensorFlow's C kernel API: dtype and status mapping,
// shapes, string inputs and failure reporting. C API only (no TF C++).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tf_c_api.h"
#include "horovod_accel/core_api.h"

namespace hvda_tf {

// The core's dtype code (core_api.h) of a TF dtype; -1 when unsupported.
int32_t CoreDtype(TF_DataType t);
const char* TfDtypeName(TF_DataType t);

// hvda_core_status -> TF_Code, as upstream maps the core's statuses:
// precondition (cross-rank mismatch) -> FAILED_PRECONDITION, invalid
// argument -> INVALID_ARGUMENT, aborted (shutdown, lost peer) -> ABORTED,
// the rest -> UNKNOWN.
TF_Code TfCode(int32_t core_status);

std::vector<int64_t> Dims(const TF_Tensor* t);
int64_t NumElements(const std::vector<int64_t>& dims);

// Marks the op failed (the error the Python caller sees). Any thread.
void SetFailure(TF_OpKernelContext* ctx, TF_Code code, const std::string& message);
void SetFailure(TF_OpKernelConstruction* ctx, TF_Code code, const std::string& message);

// Reads input `index`, a scalar string tensor, into *out. False (and the
// op failed) when it is not one.
bool ReadStringInput(TF_OpKernelContext* ctx, int index, std::string* out);

// Attribute readers for kernel construction; the default when absent.
int64_t AttrInt(TF_OpKernelConstruction* ctx, const char* name, int64_t dflt);
float AttrFloat(TF_OpKernelConstruction* ctx, const char* name, float dflt);
bool AttrBool(TF_OpKernelConstruction* ctx, const char* name, bool dflt);

// Owns a TF_Status for one call.
class ScopedStatus {
 public:
  ScopedStatus() : s_(TF_NewStatus()) {}
  ~ScopedStatus() { TF_DeleteStatus(s_); }
  ScopedStatus(const ScopedStatus&) = delete;
  ScopedStatus& operator=(const ScopedStatus&) = delete;
  TF_Status* get() const { return s_; }
  bool ok() const { return TF_GetCode(s_) == TF_OK; }
  std::string message() const { return TF_Message(s_); }

 private:
  TF_Status* s_;
};

}  // namespace hvda_tf
