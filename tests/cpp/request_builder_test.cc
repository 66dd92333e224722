// BuildRequest (csrc/common/request_builder.h): what an enqueued op must be,
// the errors that say what is wrong, and the Request it becomes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/request_builder.h"

namespace hvda {
namespace {

// Global ranks 0, 2, 5; this rank is set rank 1 (global 2).
// (ProcessSetState owns a queue and cannot be copied or moved.)
std::unique_ptr<ProcessSetState> MakeSet(int id = 3) {
  auto ps = std::make_unique<ProcessSetState>();
  ps->id = id;
  ps->ranks = {0, 2, 5};
  ps->set_rank = 1;
  return ps;
}

EnqueueArgs Op(RequestType type, std::vector<int64_t> shape, DataType dtype = DataType::kFloat32) {
  EnqueueArgs a;
  a.type = type;
  a.name = "t";
  a.shape = std::move(shape);
  a.dtype = dtype;
  return a;
}

Status Build(EnqueueArgs a, const ProcessSetState& ps, Request* r = nullptr) {
  Request scratch;
  return BuildRequest(&a, ps, r != nullptr ? r : &scratch);
}

TEST(BuildRequest, AllreduceFillsTheRequestAndMovesNameAndShape) {
  auto set = MakeSet();
  const ProcessSetState& ps = *set;
  EnqueueArgs a = Op(RequestType::kAllreduce, {2, 3});
  a.op = ReduceOp::kMax;
  a.prescale = 0.5;
  a.postscale = 4;
  a.input = &ps;
  Request r;
  ASSERT_TRUE(BuildRequest(&a, ps, &r).ok());
  EXPECT_EQ(r.name, "t");
  EXPECT_EQ(r.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.type, RequestType::kAllreduce);
  EXPECT_EQ(r.dtype, DataType::kFloat32);
  EXPECT_EQ(r.device, -1);
  EXPECT_EQ(r.reduce_op, ReduceOp::kMax);
  EXPECT_EQ(r.prescale, 0.5);
  EXPECT_EQ(r.postscale, 4);
  EXPECT_TRUE(a.name.empty());  // moved
  EXPECT_EQ(a.input, &ps);      // the rest stays
}

TEST(BuildRequest, NonReducingOpsCarrySum) {
  EnqueueArgs a = Op(RequestType::kAllgather, {4});
  a.op = ReduceOp::kMin;
  Request r;
  ASSERT_TRUE(Build(a, *MakeSet(), &r).ok());
  EXPECT_EQ(r.reduce_op, ReduceOp::kSum);
}

TEST(BuildRequest, ZeroLengthAndScalarAllreduceAreFine) {
  EXPECT_TRUE(Build(Op(RequestType::kAllreduce, {0}), *MakeSet()).ok());
  EXPECT_TRUE(Build(Op(RequestType::kAllreduce, {}), *MakeSet()).ok());
  EXPECT_TRUE(Build(Op(RequestType::kAllgather, {0, 5}), *MakeSet()).ok());
}

TEST(BuildRequest, AFailureLeavesTheArgumentsAlone) {
  EnqueueArgs a = Op(RequestType::kAllreduce, {-1});
  Request r;
  EXPECT_FALSE(BuildRequest(&a, *MakeSet(), &r).ok());
  EXPECT_EQ(a.name, "t");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{-1}));
}

TEST(BuildRequest, UnsupportedDtype) {
  Status st = Build(Op(RequestType::kAllreduce, {1}, static_cast<DataType>(99)), *MakeSet());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.reason(), "tensor 't' has an unsupported data type");
}

TEST(BuildRequest, AcceleratorTensorNeedsADeviceType) {
  EnqueueArgs a = Op(RequestType::kAllreduce, {1});
  a.device = 0;
  Status st = Build(a, *MakeSet());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("is on accelerator 0 without a device type"), std::string::npos);
}

TEST(BuildRequest, NegativeDimension) {
  Status st = Build(Op(RequestType::kBroadcast, {3, -2}), *MakeSet());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.reason(), "tensor 't' has a negative dimension");
}

TEST(BuildRequest, UnknownReductionOp) {
  for (int op : {-1, 42}) {
    EnqueueArgs a = Op(RequestType::kReducescatter, {3});
    a.op = static_cast<ReduceOp>(op);
    Status st = Build(a, *MakeSet());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.reason(), "unknown reduction op " + std::to_string(op) + " for 't'");
  }
}

TEST(BuildRequest, BoolCannotBeReduced) {
  Status st = Build(Op(RequestType::kAllreduce, {3}, DataType::kBool), *MakeSet());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("cannot reduce bool tensor 't'"), std::string::npos);
  EXPECT_TRUE(Build(Op(RequestType::kAllgather, {3}, DataType::kBool), *MakeSet()).ok());
}

TEST(BuildRequest, AdasumLimits) {
  auto global_set = MakeSet(0);
  const ProcessSetState& global = *global_set;
  EnqueueArgs a = Op(RequestType::kAllreduce, {8});
  a.op = ReduceOp::kAdasum;
  EXPECT_TRUE(Build(a, global).ok());

  EnqueueArgs rs = a;
  rs.type = RequestType::kReducescatter;
  EXPECT_EQ(Build(rs, global).code(), StatusCode::kUnimplemented);

  EnqueueArgs ints = a;
  ints.dtype = DataType::kInt32;
  Status st = Build(ints, global);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("needs a floating-point tensor"), std::string::npos);

  EnqueueArgs dev = a;
  dev.device = 0;
  dev.device_type = "accel";
  EXPECT_EQ(Build(dev, global).code(), StatusCode::kUnimplemented);

  st = Build(a, *MakeSet(3));
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.reason().find("not process set 3"), std::string::npos);
}

TEST(BuildRequest, ScalarsNeedADimensionWhereOpsSplitRows) {
  for (RequestType t :
       {RequestType::kAllgather, RequestType::kAlltoall, RequestType::kReducescatter}) {
    Status st = Build(Op(t, {}), *MakeSet());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.reason().find("needs a tensor with at least one dimension, got a scalar"),
              std::string::npos);
  }
}

TEST(BuildRequest, BroadcastRootIsMappedToItsSetRank) {
  EnqueueArgs a = Op(RequestType::kBroadcast, {2});
  a.root_rank = 5;
  Request r;
  ASSERT_TRUE(Build(a, *MakeSet(), &r).ok());
  EXPECT_EQ(r.root_rank, 2);
}

TEST(BuildRequest, BroadcastRootOutsideTheSet) {
  for (int root : {1, -1, 6}) {
    EnqueueArgs a = Op(RequestType::kBroadcast, {2});
    a.root_rank = root;
    Status st = Build(a, *MakeSet());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.reason(), "broadcast root rank " + std::to_string(root) +
                               " of 't' is not a member of process set 3.");
  }
}

TEST(BuildRequest, AlltoallWithoutSplitsDividesTheRowsEvenly) {
  Request r;
  ASSERT_TRUE(Build(Op(RequestType::kAlltoall, {6, 2}), *MakeSet(), &r).ok());
  EXPECT_EQ(r.splits, (std::vector<int64_t>{2, 2, 2}));
  Status st = Build(Op(RequestType::kAlltoall, {7, 2}), *MakeSet());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("to be divisible by the number of ranks (3)"), std::string::npos);
}

TEST(BuildRequest, AlltoallSplits) {
  EnqueueArgs a = Op(RequestType::kAlltoall, {5});
  a.splits = {0, 4, 1};
  Request r;
  ASSERT_TRUE(Build(a, *MakeSet(), &r).ok());
  EXPECT_EQ(r.splits, (std::vector<int64_t>{0, 4, 1}));

  a.splits = {5};
  Status st = Build(a, *MakeSet());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("have 1 entries; need one per rank (3)"), std::string::npos);

  a.splits = {6, -1, 0};
  st = Build(a, *MakeSet());
  EXPECT_EQ(st.reason(), "alltoall splits of 't' must be >= 0");

  a.splits = {1, 1, 1};
  st = Build(a, *MakeSet());
  EXPECT_EQ(st.reason(), "alltoall splits of 't' sum to 3, but the first dimension is 5.");
}

}  // namespace
}  // namespace hvda
