// Runtime at size 1 (one process, in-memory store): init, an allreduce
// enqueued and waited on, shutdown, a second init, and the errors of using
// it uninitialized or without a host device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/runtime.h"
#include "devices/cpu/register.h"

namespace hvda {
namespace {

// Sets a one-rank job's environment and restores the previous one after.
class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* var : {"HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK",
                            "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE",
                            "HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT",
                            "HOROVOD_CONTROLLER", "HOROVOD_CPU_OPERATIONS", "HOROVOD_TIMELINE",
                            "HOROVOD_GPU_OPERATIONS", "_HOROVOD_ELASTIC_ROUND"}) {
      const char* v = std::getenv(var);
      saved_[var] = v != nullptr ? std::make_unique<std::string>(v) : nullptr;
      unsetenv(var);
    }
    Set("HOROVOD_RANK", "0");
    Set("HOROVOD_SIZE", "1");
    Set("HOROVOD_LOCAL_RANK", "0");
    Set("HOROVOD_LOCAL_SIZE", "1");
    Set("HOROVOD_CROSS_RANK", "0");
    Set("HOROVOD_CROSS_SIZE", "1");
  }
  void TearDown() override {
    for (const auto& kv : saved_) {
      if (kv.second)
        setenv(kv.first.c_str(), kv.second->c_str(), 1);
      else
        unsetenv(kv.first.c_str());
    }
  }
  void Set(const char* var, const char* value) { setenv(var, value, 1); }

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

  std::map<std::string, std::unique_ptr<std::string>> saved_;
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
  ASSERT_TRUE(rt.Init({}, false).ok());
  EXPECT_TRUE(rt.initialized());
  EXPECT_FALSE(rt.GenerationEnded());
  EXPECT_EQ(rt.topology().rank, 0);
  EXPECT_EQ(rt.topology().size, 1);
  EXPECT_EQ(rt.ProcessSetIds(), std::vector<int>{0});
  EXPECT_EQ(rt.GlobalBackends(), std::vector<std::string>{"gloo"});  // shm needs 2 ranks
  ASSERT_TRUE(rt.Init({}, false).ok());  // a no-op while initialized
  Allreduce(&rt, "first");
  rt.Shutdown();
  EXPECT_FALSE(rt.initialized());
  rt.Shutdown();  // twice is fine

  ASSERT_TRUE(rt.Init({}, false).ok());
  Allreduce(&rt, "second");
  std::shared_ptr<Work> barrier;
  ASSERT_TRUE(rt.EnqueueBarrier(0, &barrier).ok());
  ASSERT_TRUE(barrier->Wait(30));
  EXPECT_TRUE(barrier->status().ok());
  rt.Shutdown();
}

TEST_F(RuntimeTest, BadSettingsFailInitWithoutInitializing) {
  Set("HOROVOD_CONTROLLER", "zmq");
  Runtime rt(RegisterCpuDevice);
  Status st = rt.Init({}, false);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("HOROVOD_CONTROLLER=zmq is not available"), std::string::npos);
  EXPECT_FALSE(rt.initialized());

  unsetenv("HOROVOD_CONTROLLER");
  Set("HOROVOD_CPU_OPERATIONS", "mpi");  // not a job started by mpirun
  st = rt.Init({}, false);
  EXPECT_EQ(st.code(), StatusCode::kPrecondition);
  EXPECT_NE(st.reason().find("HOROVOD_CPU_OPERATIONS=mpi needs a job started by mpirun"),
            std::string::npos);

  unsetenv("HOROVOD_CPU_OPERATIONS");
  Set("HOROVOD_GPU_OPERATIONS", "MPI");
  EXPECT_EQ(rt.Init({}, false).code(), StatusCode::kInvalidArgument);
}

TEST_F(RuntimeTest, NoHostDeviceRegistered) {
  Runtime rt(nullptr);
  Status st = rt.Init({}, false);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "no CPU device is registered in this build");
  EXPECT_FALSE(rt.initialized());
}

}  // namespace
}  // namespace hvda
