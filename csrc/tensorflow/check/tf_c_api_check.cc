// Checks our TensorFlow C API declarations (tf_c_api_list.h, tf_c_api.h)
// against a real TensorFlow: compiled with TF's own C API headers (never
// part of a build; tests/python/test_tf_ops.py compiles it against the
// installed tensorflow's include folder, links libtensorflow_framework.so.2
// and runs it):
// - at compile time, every function in our list has exactly TF's type, every
//   TF_DataType / TF_Code value equals TF's, and the by-value / laid-out
//   types (TF_StringView, TF_Bool, the enums, TF_TString) have the layout
//   tf_c_api.h assumes;
// - at link time, every listed function is exported by
//   libtensorflow_framework.so.2 (the link uses -Wl,--no-undefined semantics
//   of an executable: an unresolved reference fails);
// - at run time, hvda_tf::ReadTString decodes each TF_TString representation
//   (small, large, offset, view) as TF's own inline accessors do.
// Prints "TF C API CHECK OK" and exits 0 on success.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "tensorflow/c/experimental/stream_executor/stream_executor.h"
#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"
#include "tensorflow/c/tf_tstring.h"

// Our lists (they name TF's types here) and our TString reader; not
// tf_c_api.h, whose declarations would clash with TF's.
#include "../tf_c_api_list.h"
#include "../tf_tstring_reader.h"

#define HVDA_CHECK_TYPE(ret, name, params)                                      \
  static_assert(std::is_same<decltype(&::name), ret(*) params>::value,          \
                #name ": our declaration differs from TensorFlow's");
HVDA_TF_C_FUNCTIONS(HVDA_CHECK_TYPE)
HVDA_TF_C_DEVICE_FUNCTIONS(HVDA_CHECK_TYPE)

#define HVDA_CHECK_VALUE(name, value) \
  static_assert(static_cast<int>(name) == (value), #name " has another value in TensorFlow");
HVDA_TF_DATA_TYPES(HVDA_CHECK_VALUE)
HVDA_TF_CODES(HVDA_CHECK_VALUE)

static_assert(sizeof(TF_DataType) == sizeof(int) && sizeof(TF_Code) == sizeof(int), "enum size");
static_assert(std::is_same<TF_Bool, unsigned char>::value, "TF_Bool");
static_assert(sizeof(TF_StringView) == 16 && offsetof(TF_StringView, data) == 0 &&
                  offsetof(TF_StringView, len) == 8,
              "TF_StringView layout");
static_assert(sizeof(TF_TString) == hvda_tf::kTStringBytes, "TF_TString size");

namespace {

int failures = 0;

void Expect(const TF_TString* s, const char* what) {
  const std::string theirs(TF_TString_GetDataPointer(s), TF_TString_GetSize(s));
  const std::string ours = hvda_tf::ReadTString(s);
  if (ours != theirs) {
    std::printf("FAIL %s: ours '%s' (%zu), TensorFlow's '%s' (%zu)\n", what, ours.c_str(),
                ours.size(), theirs.c_str(), theirs.size());
    ++failures;
  }
}

}  // namespace

int main() {
  // Every listed function must resolve in libtensorflow_framework.so.2.
  const void* volatile addresses[] = {
#define HVDA_ADDRESS(ret, name, params) reinterpret_cast<const void*>(&::name),
      HVDA_TF_C_FUNCTIONS(HVDA_ADDRESS) HVDA_TF_C_DEVICE_FUNCTIONS(HVDA_ADDRESS)};
  for (const void* a : addresses) {
    if (a == nullptr) ++failures;
  }

  const std::string lengths[] = {"", "a", std::string(22, 's'), std::string(23, 'l'),
                                 "HorovodAllreduce.noname.12", std::string(1000, 'x')};
  for (const std::string& text : lengths) {
    TF_TString s;
    TF_TString_Init(&s);
    TF_TString_Copy(&s, text.data(), text.size());  // small or large
    Expect(&s, TF_TString_GetType(&s) == TF_TSTR_SMALL ? "small" : "large");
    TF_TString_Dealloc(&s);
    TF_TString_Init(&s);
    TF_TString_AssignView(&s, text.data(), text.size());
    Expect(&s, "view");
    TF_TString_Dealloc(&s);
  }
  // An offset string: the bytes follow the element (as in a serialized
  // buffer); built by hand, read by TF's accessors and ours.
  struct {
    TF_TString s;
    char bytes[32];
  } buf;
  std::memset(&buf, 0, sizeof(buf));
  const char text[] = "offset-string";
  const uint32_t size = (sizeof(text) - 1) << 2 | TF_TSTR_OFFSET;
  const uint32_t offset = offsetof(decltype(buf), bytes);
  std::memcpy(&buf.s.u.offset.size, &size, 4);
  std::memcpy(&buf.s.u.offset.offset, &offset, 4);
  std::memcpy(buf.bytes, text, sizeof(text) - 1);
  if (TF_TString_GetType(&buf.s) != TF_TSTR_OFFSET) ++failures;
  Expect(&buf.s, "offset");

  if (failures) return 1;
  std::printf("TF C API CHECK OK\n");
  return 0;
}
