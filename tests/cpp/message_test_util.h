// Builders of Requests and Responses shared by the unit tests of the message,
// response cache, fusion and tensor queue (header-only, test code only).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/message.h"

namespace hvda {
namespace testing {

inline Request MakeRequest(const std::string& name, std::vector<int64_t> shape,
                           RequestType type = RequestType::kAllreduce) {
  Request r;
  r.name = name;
  r.type = type;
  r.shape = std::move(shape);
  return r;
}

inline Response MakeResponse(const std::string& name, std::vector<int64_t> shape,
                             DataType dtype = DataType::kFloat32) {
  Response r;
  r.type = ResponseType::kAllreduce;
  r.names = {name};
  r.shapes = {std::move(shape)};
  r.dtype = dtype;
  return r;
}

}  // namespace testing
}  // namespace hvda
