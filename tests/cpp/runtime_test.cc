// Runtime at size 1 (one process, in-memory store): init, an allreduce
// enqueued and waited on, shutdown, a second init, and the errors of using
// it uninitialized or without a host device.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "common/runtime.h"
#include "devices/cpu/register.h"

namespace hvda {
namespace {

// A one-rank job (JobSpec at its defaults: rank 0 of 1, no store, so an
// in-memory one). The core reads nothing from the environment here: every
// setting a test changes goes into the JobSpec.
class RuntimeTest : public ::testing::Test {
 protected:
  JobSpec job_;

  // An allreduce (sum) of 4 floats; at size 1 the output is the input.
  void Allreduce(Runtime* rt, const std::string& name) {
    std::vector<float> in{1, 2, 3, 4}, out(4, 0);
    EnqueueArgs a;
    a.type = RequestType::kAllreduce;
    a.name = name;
    a.input = in.data();
    a.output = out.data();
    a.dtype = DataType::kFloat32;
    a.shape = {4};
    std::shared_ptr<Work> w;
    ASSERT_TRUE(rt->EnqueueOne(a, &w).ok());
    ASSERT_TRUE(w->Wait(30));
    ASSERT_TRUE(w->status().ok()) << w->status().reason();
    EXPECT_EQ(out, in);
  }

};

TEST_F(RuntimeTest, EnqueueBeforeInitSaysToInit) {
  Runtime rt(RegisterCpuDevice);
  EXPECT_FALSE(rt.initialized());
  EnqueueArgs a;
  a.name = "early";
  a.shape = {1};
  std::shared_ptr<Work> w;
  Status st = rt.EnqueueOne(a, &w);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.reason(), "Horovod has not been initialized; call hvd.init() first.");
  std::vector<std::shared_ptr<Work>> works;
  EXPECT_EQ(rt.Enqueue({}, &works).code(), StatusCode::kInvalidArgument);
  int id = -1;
  EXPECT_EQ(rt.AddProcessSet({0}, &id).code(), StatusCode::kInvalidArgument);
}

TEST_F(RuntimeTest, InitAllreduceShutdownAndInitAgain) {
  Runtime rt(RegisterCpuDevice);
  ASSERT_TRUE(rt.Init(job_).ok());
  EXPECT_TRUE(rt.initialized());
  EXPECT_FALSE(rt.GenerationEnded());
  Topology topo;
  ASSERT_TRUE(rt.GetTopology(&topo).ok());
  EXPECT_EQ(topo.rank, 0);
  EXPECT_EQ(topo.size, 1);
  EXPECT_EQ(rt.ProcessSetIds(), std::vector<int>{0});
  EXPECT_EQ(rt.GlobalBackends(), std::vector<std::string>{"gloo"});  // shm needs 2 ranks
  ASSERT_TRUE(rt.Init(job_).ok());  // a no-op while initialized
  Allreduce(&rt, "first");
  rt.Shutdown();
  EXPECT_FALSE(rt.initialized());
  rt.Shutdown();  // twice is fine

  ASSERT_TRUE(rt.Init(job_).ok());
  Allreduce(&rt, "second");
  std::shared_ptr<Work> barrier;
  ASSERT_TRUE(rt.EnqueueBarrier(0, &barrier).ok());
  ASSERT_TRUE(barrier->Wait(30));
  EXPECT_TRUE(barrier->status().ok());
  rt.Shutdown();
}

// A Work outlives its generation; ops of threads that enqueue and wait while
// the main thread shuts down and re-inits fail cleanly or succeed, never
// touch a freed generation (each call holds the one it found).
TEST_F(RuntimeTest, GenerationsComeAndGoUnderBusyThreads) {
  Runtime rt(RegisterCpuDevice);
  ASSERT_TRUE(rt.Init(job_).ok());
  std::vector<float> in{1, 2}, out(2);
  EnqueueArgs a;
  a.type = RequestType::kAllreduce;
  a.name = "kept";
  a.input = in.data();
  a.output = out.data();
  a.dtype = DataType::kFloat32;
  a.shape = {2};
  std::shared_ptr<Work> kept;
  ASSERT_TRUE(rt.EnqueueOne(a, &kept).ok());
  ASSERT_TRUE(kept->Wait(30));
  rt.Shutdown();
  ASSERT_TRUE(rt.Init(job_).ok());
  EXPECT_TRUE(kept->Wait(1));  // the old generation's Work still answers
  EXPECT_TRUE(kept->status().ok());

  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> tin{1, 2, 3}, tout(3);
      for (int i = 0; !stop.load(); ++i) {
        EnqueueArgs op;
        op.type = RequestType::kAllreduce;
        op.name = "t" + std::to_string(t) + "." + std::to_string(i);
        op.input = tin.data();
        op.output = tout.data();
        op.dtype = DataType::kFloat32;
        op.shape = {3};
        std::shared_ptr<Work> w;
        if (!rt.EnqueueOne(op, &w).ok()) continue;  // between generations
        EXPECT_TRUE(w->Wait(30)) << op.name;
        done.fetch_add(1);
      }
    });
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    rt.Shutdown();
    ASSERT_TRUE(rt.Init(job_).ok());
  }
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_GT(done.load(), 0);
  rt.Shutdown();
}

TEST_F(RuntimeTest, BadSettingsFailInitWithoutInitializing) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", "zmq").ok());
  Runtime rt(RegisterCpuDevice);
  Status st = rt.Init(job_);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("HOROVOD_CONTROLLER=zmq is not available"), std::string::npos);
  EXPECT_FALSE(rt.initialized());

  ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", "").ok());
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "mpi").ok());  // not an MPI job
  st = rt.Init(job_);
  EXPECT_EQ(st.code(), StatusCode::kPrecondition);
  EXPECT_NE(st.reason().find("HOROVOD_CPU_OPERATIONS=mpi needs a job started by mpirun"),
            std::string::npos);

  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "").ok());
  ASSERT_TRUE(job_.settings.Set("HOROVOD_GPU_OPERATIONS", "MPI").ok());
  EXPECT_EQ(rt.Init(job_).code(), StatusCode::kInvalidArgument);
}

TEST_F(RuntimeTest, NoHostDeviceRegistered) {
  Runtime rt(nullptr);
  Status st = rt.Init(job_);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "no CPU device is registered in this build");
  EXPECT_FALSE(rt.initialized());
}

}  // namespace
}  // namespace hvda
