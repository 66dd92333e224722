#include "common/fusion.h"

#include <iterator>

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

void FuseResponses(std::vector<Response>* responses, int64_t threshold_bytes) {
  if (threshold_bytes <= 0 || responses->size() < 2) return;
  std::vector<Response> out;
  std::vector<bool> taken(responses->size(), false);
  for (size_t i = 0; i < responses->size(); ++i) {
    if (taken[i]) continue;
    taken[i] = true;
    Response group = std::move((*responses)[i]);
    if (Fusable(group)) {
      int64_t bytes = ResponseBytes(group);
      for (size_t j = i + 1; j < responses->size() && bytes < threshold_bytes; ++j) {
        Response& c = (*responses)[j];
        if (taken[j] || !Compatible(group, c)) continue;
        int64_t cb = ResponseBytes(c);
        if (bytes + cb > threshold_bytes) continue;
        bytes += cb;
        taken[j] = true;
        // c is taken: its names and shapes move into the group.
        group.names.insert(group.names.end(), std::make_move_iterator(c.names.begin()),
                           std::make_move_iterator(c.names.end()));
        group.shapes.insert(group.shapes.end(), std::make_move_iterator(c.shapes.begin()),
                            std::make_move_iterator(c.shapes.end()));
      }
    }
    out.push_back(std::move(group));
  }
  responses->swap(out);
}

}  // namespace hvda
