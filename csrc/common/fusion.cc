#include "common/fusion.h"

namespace hvda {
namespace {

bool Fusable(const Response& r) {
  return r.type == ResponseType::kAllreduce;
}

bool Compatible(const Response& a, const Response& b) {
  return a.type == b.type && a.dtype == b.dtype && (a.device < 0) == (b.device < 0) &&
         a.reduce_op == b.reduce_op && a.prescale == b.prescale && a.postscale == b.postscale;
}

}  // namespace

int64_t ResponseBytes(const Response& r) {
  int64_t total = 0;
  for (size_t i = 0; i < r.shapes.size(); ++i)
    total += r.TensorElements(i) * static_cast<int64_t>(DataTypeSize(r.dtype));
  return total;
}

void FuseResponses(const std::vector<const Response*>& in, int64_t threshold_bytes,
                   std::vector<Response>* out) {
  out->clear();  // not reserved: fused, many inputs are usually one or a few responses
  std::vector<bool> taken(in.size(), false);
  for (size_t i = 0; i < in.size(); ++i) {
    if (taken[i]) continue;
    taken[i] = true;
    out->push_back(*in[i]);
    Response& group = out->back();  // valid until the next push_back
    if (threshold_bytes <= 0 || !Fusable(group)) continue;
    int64_t bytes = ResponseBytes(group);
    for (size_t j = i + 1; j < in.size() && bytes < threshold_bytes; ++j) {
      const Response& c = *in[j];
      if (taken[j] || !Compatible(group, c)) continue;
      const int64_t cb = ResponseBytes(c);
      if (bytes + cb > threshold_bytes) continue;
      bytes += cb;
      taken[j] = true;
      group.names.insert(group.names.end(), c.names.begin(), c.names.end());
      group.shapes.insert(group.shapes.end(), c.shapes.begin(), c.shapes.end());
    }
  }
}

}  // namespace hvda
