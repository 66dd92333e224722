// The executor running every collective kind over PluginDevice +
// PluginBackend for one in-process rank (tests/cpp/multi_rank_harness.h):
// fused Average allreduce with scale factors, uneven allgather, alltoall,
// uneven reduce-scatter and broadcast, each checked against its expected
// values. Shared by plugin_device_test.cc and plugin_abi_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/executor.h"
#include "common/plugin/plugin_backend.h"
#include "common/plugin/plugin_device.h"
#include "executor_test_util.h"

namespace hvda {
namespace testing {

inline Status RunToCompletion(Executor& exec, const Response& r, TensorQueue* q) {
  HVDA_RETURN_IF_ERROR(exec.Execute(r, q));
  return Drain(exec);
}

// Rank `rank` of `n`: creates the communicator from spec and runs them all.
inline void CheckEveryCollectiveKind(const std::shared_ptr<PluginLibrary>& lib, int rank, int n,
                                     const CommunicatorSpec& spec) {
  PluginDevice device(lib, rank);
  std::unique_ptr<CollectiveBackend> backend;
  Status st = PluginBackend::Create(lib, &device, spec, &backend);
  ASSERT_TRUE(st.ok()) << st.reason();
  std::vector<std::unique_ptr<CollectiveBackend>> backends;
  backends.push_back(std::move(backend));
  Executor exec(&device, std::move(backends), nullptr);
  ASSERT_TRUE(exec.status().ok()) << exec.status().reason();
  TensorQueue q;

  // Fused Average allreduce with scale factors (one empty tensor).
  std::vector<float> a(7), b(0), out_a(7), out_b(0);
  for (int i = 0; i < 7; ++i) a[i] = static_cast<float>(rank * 7 + i);
  Response ar;
  ar.type = ResponseType::kAllreduce;
  ar.dtype = DataType::kFloat32;
  ar.reduce_op = ReduceOp::kAverage;
  ar.prescale = 2.0;
  ar.postscale = 3.0;
  ar.names = {"a", "b"};
  ar.shapes = {{7}, {0}};
  TensorEntry ea = Entry("a", {7}, a.data(), out_a.data());
  auto wa = ea.work;
  ASSERT_TRUE(q.Add({ea, Entry("b", {0}, b.data(), out_b.data())}).ok());
  ASSERT_TRUE(RunToCompletion(exec, ar, &q).ok());
  ASSERT_TRUE(wa->status().ok()) << wa->status().reason();
  for (int i = 0; i < 7; ++i) {
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += 2.0 * (r * 7 + i);
    ASSERT_FLOAT_EQ(out_a[i], static_cast<float>(sum / n * 3.0));
  }

  // Allgather with a different dim0 per rank (composed: grouped broadcasts).
  std::vector<int64_t> g(2 * (rank + 1), rank);
  Response ag;
  ag.type = ResponseType::kAllgather;
  ag.dtype = DataType::kInt64;
  ag.names = {"g"};
  ag.shapes = {{rank + 1, 2}};
  for (int r = 0; r < n; ++r) ag.rank_dim0.push_back(r + 1);
  TensorEntry eg = Entry("g", {rank + 1, 2}, g.data(), nullptr);
  auto wg = eg.work;
  ASSERT_TRUE(q.Add({eg}).ok());
  ASSERT_TRUE(RunToCompletion(exec, ag, &q).ok());
  ASSERT_TRUE(wg->status().ok()) << wg->status().reason();
  const int64_t* got = static_cast<const int64_t*>(wg->output->data());
  size_t k = 0;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < 2 * (r + 1); ++i) ASSERT_EQ(got[k++], r);

  // Alltoall: rank r sends j+1 rows to rank j (alltoallv, or grouped send/recv
  // plus the core's copy of the own part).
  std::vector<int32_t> send;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i <= j; ++i) send.push_back(rank * 100 + j);
  Response a2a;
  a2a.type = ResponseType::kAlltoall;
  a2a.dtype = DataType::kInt32;
  a2a.names = {"x"};
  a2a.shapes = {{static_cast<int64_t>(send.size())}};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) a2a.splits_matrix.push_back(j + 1);
  TensorEntry ex = Entry("x", {static_cast<int64_t>(send.size())}, send.data(), nullptr);
  auto wx = ex.work;
  ASSERT_TRUE(q.Add({ex}).ok());
  ASSERT_TRUE(RunToCompletion(exec, a2a, &q).ok());
  ASSERT_TRUE(wx->status().ok()) << wx->status().reason();
  const int32_t* rx = static_cast<const int32_t*>(wx->output->data());
  for (int r = 0; r < n; ++r)
    for (int i = 0; i <= rank; ++i) ASSERT_EQ(*rx++, r * 100 + rank);

  // Reducescatter of 2n+1 rows (uneven: composed from allreduce).
  const int64_t rows = 2 * n + 1;
  std::vector<double> rs_in(rows, rank + 1.0);
  const int64_t mine = rows / n + (rank < rows % n ? 1 : 0);
  std::vector<double> rs_out(mine, 0.0);
  Response rs;
  rs.type = ResponseType::kReducescatter;
  rs.dtype = DataType::kFloat64;
  rs.reduce_op = ReduceOp::kSum;
  rs.names = {"r"};
  rs.shapes = {{rows}};
  TensorEntry er = Entry("r", {rows}, rs_in.data(), rs_out.data());
  auto wr = er.work;
  ASSERT_TRUE(q.Add({er}).ok());
  ASSERT_TRUE(RunToCompletion(exec, rs, &q).ok());
  ASSERT_TRUE(wr->status().ok()) << wr->status().reason();
  for (double v : rs_out) ASSERT_EQ(v, n * (n + 1) / 2.0);

  // Broadcast from the last rank.
  std::vector<uint8_t> bc(5, static_cast<uint8_t>(rank));
  Response br;
  br.type = ResponseType::kBroadcast;
  br.dtype = DataType::kUInt8;
  br.root_rank = n - 1;
  br.names = {"c"};
  br.shapes = {{5}};
  TensorEntry ec = Entry("c", {5}, bc.data(), bc.data());
  ASSERT_TRUE(q.Add({ec}).ok());
  ASSERT_TRUE(RunToCompletion(exec, br, &q).ok());
  for (uint8_t v : bc) ASSERT_EQ(v, n - 1);
}

}  // namespace testing
}  // namespace hvda
