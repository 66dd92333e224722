// BackendSelection (csrc/common/backend_selection.h) over a registry of fake
// registrations: which data planes and control transport a process set gets
// for HOROVOD_CPU_OPERATIONS / HOROVOD_CONTROLLER and its hosts, and the
// errors for names that are unknown or unusable.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/backend_selection.h"
#include "common/store/memory_store.h"
#include "common/job_spec.h"

namespace hvda {
namespace {

class FakeBackend : public CollectiveBackend {
 public:
  FakeBackend(std::string name, const CommunicatorSpec& spec)
      : name_(std::move(name)), rank_(spec.rank), size_(spec.size) {}
  const char* name() const override { return name_.c_str(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool Supports(CollectiveKind, DataType, ReduceOp) const override { return true; }
  Status Allreduce(void*, int64_t, DataType, ReduceOp, Stream*) override { return Status::OK(); }
  Status Allgatherv(const void*, void*, const std::vector<int64_t>&, Stream*) override {
    return Status::OK();
  }
  Status Broadcast(void*, int64_t, int, Stream*) override { return Status::OK(); }
  Status Alltoallv(const void*, const std::vector<int64_t>&, void*, const std::vector<int64_t>&,
                   Stream*) override {
    return Status::OK();
  }
  Status Reducescatter(const void*, void*, const std::vector<int64_t>&, DataType, ReduceOp,
                       Stream*) override {
    return Status::OK();
  }
  Status Barrier(Stream*) override { return Status::OK(); }

 private:
  std::string name_;
  int rank_, size_;
};

bool OneHost(const CommunicatorSpec& spec) {
  for (const auto& h : spec.hosts)
    if (h != spec.hosts.front()) return false;
  return spec.size > 1;
}

// A registry like the CPU device's: "shm" (one host only, carries control),
// "gloo" (anywhere) and "mpi" (needs `mpi_ok`, can carry HOROVOD_CONTROLLER=mpi).
// Every communicator made is recorded as "<name>@<prefix>".
class BackendSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Settings::FromEnvironment(&job_.settings).ok());
    ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "shm,gloo").ok());
    ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", "gloo").ok());
    auto make = [this](const std::string& name) {
      return [this, name](const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out) {
        if (name == fail_create_) return Status::Aborted(name + " could not connect");
        made_.push_back(name + "@" + spec.prefix);
        out->reset(new FakeBackend(name, spec));
        return Status::OK();
      };
    };
    BackendRegistration shm;
    shm.name = "shm";
    shm.usable = OneHost;
    shm.carries_control = true;
    shm.create = make("shm");
    registry_.AddBackend(shm);
    BackendRegistration gloo;
    gloo.name = "gloo";
    gloo.create = make("gloo");
    registry_.AddBackend(gloo);
    BackendRegistration mpi;
    mpi.name = "mpi";
    mpi.available = [this](const JobSpec&, const std::string& setting) {
      return mpi_ok_ ? Status::OK() : Status::Precondition(setting + " needs mpirun");
    };
    mpi.create = make("mpi");
    mpi.control_hint = "mpi under mpirun";
    mpi.create_control = [this](const CommunicatorSpec& spec,
                                std::unique_ptr<CollectiveBackend>* out) {
      made_.push_back("mpi-control@" + spec.prefix);
      out->reset(new FakeBackend("mpi", spec));
      return Status::OK();
    };
    registry_.AddBackend(mpi);
  }

  CommunicatorSpec Spec(const std::vector<std::string>& hosts, int rank = 0) {
    CommunicatorSpec spec;
    spec.store = &store_;
    spec.prefix = "g1/ps0/";
    spec.rank = rank;
    spec.size = static_cast<int>(hosts.size());
    for (int r = 0; r < spec.size; ++r) spec.global_ranks.push_back(r);
    spec.hosts = hosts;
    spec.timeout_seconds = 10;
    spec.job = &job_;
    return spec;
  }

  Status Select(const std::vector<std::string>& hosts, ProcessSetPlanes* planes) {
    BackendSelection sel;
    HVDA_RETURN_IF_ERROR(BackendSelection::Create(&registry_, job_, &sel));
    return sel.CreateProcessSetPlanes(Spec(hosts), "", planes);
  }

  static std::vector<std::string> Names(const ProcessSetPlanes& p) {
    std::vector<std::string> out;
    for (const auto& b : p.backends) out.push_back(b->name());
    return out;
  }

  JobSpec job_;
  Registry registry_;
  MemoryStore store_;
  bool mpi_ok_ = true;
  std::string fail_create_;
  std::vector<std::string> made_;
};

using Strings = std::vector<std::string>;

TEST(SplitSelectionList, LowerCasesAndDropsBlanks) {
  EXPECT_EQ(SplitSelectionList(" SHM , Gloo,,mpi "), (Strings{"shm", "gloo", "mpi"}));
  EXPECT_TRUE(SplitSelectionList("").empty());
  EXPECT_TRUE(SplitSelectionList(" , ").empty());
}

TEST_F(BackendSelectionTest, OneHostRunsShmThenGlooAndNegotiatesOverShm) {
  ProcessSetPlanes planes;
  ASSERT_TRUE(Select({"a", "a"}, &planes).ok());
  EXPECT_EQ(Names(planes), (Strings{"shm", "gloo"}));
  EXPECT_EQ(made_, (Strings{"shm@g1/ps0/shm/", "gloo@g1/ps0/gloo/"}));
  ASSERT_NE(planes.transport, nullptr);
  EXPECT_TRUE(planes.eager_pacing);
  EXPECT_EQ(planes.negotiation, "shm");
}

TEST_F(BackendSelectionTest, SeveralHostsSkipShm) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "shm,mpi").ok());
  // (Over mpi: a Gloo controller transport would wait for the peer rank.)
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", "mpi").ok());
  ProcessSetPlanes planes;
  ASSERT_TRUE(Select({"a", "b"}, &planes).ok());
  EXPECT_EQ(Names(planes), (Strings{"mpi"}));
  EXPECT_EQ(made_, (Strings{"mpi@g1/ps0/mpi/"}));
}

TEST_F(BackendSelectionTest, NamesAreCaseAndSpaceInsensitive) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", " GLOO , Shm ").ok());
  ProcessSetPlanes planes;
  ASSERT_TRUE(Select({"a", "a"}, &planes).ok());
  EXPECT_EQ(Names(planes), (Strings{"gloo", "shm"}));
  EXPECT_EQ(planes.negotiation, "shm");  // the first that carries control, not the first
}

TEST_F(BackendSelectionTest, WithoutAControlCarrierNegotiatesOverGloo) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "gloo").ok());
  ProcessSetPlanes planes;
  ASSERT_TRUE(Select({"a"}, &planes).ok());  // one rank: a Gloo context needs no peer
  EXPECT_EQ(Names(planes), (Strings{"gloo"}));
  ASSERT_NE(planes.transport, nullptr);
  EXPECT_FALSE(planes.eager_pacing);
  EXPECT_EQ(planes.negotiation, "gloo");
}

TEST_F(BackendSelectionTest, NamedControllerSharesTheDataPlaneBackend) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "shm,mpi").ok());
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", "MPI").ok());
  ProcessSetPlanes planes;
  ASSERT_TRUE(Select({"a", "a"}, &planes).ok());
  EXPECT_EQ(Names(planes), (Strings{"shm", "mpi"}));
  EXPECT_EQ(made_, (Strings{"shm@g1/ps0/shm/", "mpi@g1/ps0/mpi/"}));  // no communicator of its own
  EXPECT_FALSE(planes.eager_pacing);
  EXPECT_EQ(planes.negotiation, "mpi");
}

TEST_F(BackendSelectionTest, NamedControllerOutsideTheDataPlaneGetsItsOwnCommunicator) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", "mpi").ok());
  ProcessSetPlanes planes;
  ASSERT_TRUE(Select({"a", "a"}, &planes).ok());
  EXPECT_EQ(Names(planes), (Strings{"shm", "gloo"}));
  EXPECT_EQ(made_,
            (Strings{"shm@g1/ps0/shm/", "gloo@g1/ps0/gloo/", "mpi-control@g1/ps0/ctrl-mpi/"}));
  EXPECT_FALSE(planes.eager_pacing);
  EXPECT_EQ(planes.negotiation, "mpi");
}

TEST_F(BackendSelectionTest, UnknownControllerListsTheChoices) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", "zmq").ok());
  BackendSelection sel;
  Status st = BackendSelection::Create(&registry_, job_, &sel);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.reason(), "HOROVOD_CONTROLLER=zmq is not available in this build; use gloo (the "
                         "default), or mpi under mpirun.");
}

TEST_F(BackendSelectionTest, EmptyControllerMeansGloo) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", " ").ok());
  BackendSelection sel;
  ASSERT_TRUE(BackendSelection::Create(&registry_, job_, &sel).ok());
  EXPECT_EQ(sel.controller(), "gloo");
}

TEST_F(BackendSelectionTest, UnavailableControllerFailsAtCreateNamingTheSetting) {
  mpi_ok_ = false;
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CONTROLLER", "mpi").ok());
  BackendSelection sel;
  Status st = BackendSelection::Create(&registry_, job_, &sel);
  EXPECT_EQ(st.code(), StatusCode::kPrecondition);
  EXPECT_EQ(st.reason(), "HOROVOD_CONTROLLER=mpi needs mpirun");
}

TEST_F(BackendSelectionTest, UnavailableBackendFailsAtCreateNamingTheSetting) {
  mpi_ok_ = false;
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "gloo,mpi").ok());
  BackendSelection sel;
  Status st = BackendSelection::Create(&registry_, job_, &sel);
  EXPECT_EQ(st.code(), StatusCode::kPrecondition);
  EXPECT_EQ(st.reason(), "HOROVOD_CPU_OPERATIONS=mpi needs mpirun");
}

TEST_F(BackendSelectionTest, UnknownBackendNameListsTheKnownOnes) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "shm,ucx").ok());
  ProcessSetPlanes planes;
  Status st = Select({"a", "a"}, &planes);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.reason(), "HOROVOD_CPU_OPERATIONS names 'ucx', which this build does not have; "
                         "known: shm, gloo, mpi.");
}

TEST_F(BackendSelectionTest, UpstreamNamesThisBuildLacksAreSkipped) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "ccl,NCCL,shm").ok());
  ProcessSetPlanes planes;
  ASSERT_TRUE(Select({"a", "a"}, &planes).ok());
  EXPECT_EQ(Names(planes), (Strings{"shm"}));
}

TEST_F(BackendSelectionTest, NoUsableBackendIsAnError) {
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "shm").ok());
  ProcessSetPlanes planes;
  Status st = Select({"a", "b"}, &planes);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.reason(), "HOROVOD_CPU_OPERATIONS='shm' leaves no usable CPU backend; use e.g. "
                         "shm,gloo.");
}

TEST_F(BackendSelectionTest, ABackendThatFailsToConnectFailsTheSet) {
  fail_create_ = "gloo";
  ProcessSetPlanes planes;
  Status st = Select({"a", "a"}, &planes);
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_EQ(st.reason(), "gloo could not connect");
}

TEST_F(BackendSelectionTest, HierarchyIsWhatAnyDeviceReports) {
  BackendSelection sel;
  ASSERT_TRUE(BackendSelection::Create(&registry_, job_, &sel).ok());
  HierarchyUse none = sel.Hierarchy(Spec({"a", "a", "b"}), job_.settings);
  EXPECT_FALSE(none.allreduce);
  EXPECT_FALSE(none.allgather);
  DeviceRegistration quiet;
  quiet.name = "quiet";
  quiet.hierarchy = [](const CommunicatorSpec&, const Settings&) { return HierarchyUse{}; };
  registry_.AddDevice(quiet);
  DeviceRegistration spans;
  spans.name = "spans";
  spans.hierarchy = [](const CommunicatorSpec& job, const Settings&) {
    HierarchyUse use;
    use.allreduce = job.hosts.front() != job.hosts.back();
    return use;
  };
  registry_.AddDevice(spans);
  HierarchyUse use = sel.Hierarchy(Spec({"a", "a", "b"}), job_.settings);
  EXPECT_TRUE(use.allreduce);
  EXPECT_FALSE(use.allgather);
  EXPECT_FALSE(sel.Hierarchy(Spec({"a", "a"}), job_.settings).allreduce);
}

TEST_F(BackendSelectionTest, DeviceBackendComesFromItsKindsRegistration) {
  BackendSelection sel;
  ASSERT_TRUE(BackendSelection::Create(&registry_, job_, &sel).ok());
  std::unique_ptr<CollectiveBackend> backend;
  EXPECT_EQ(sel.CreateDeviceBackend(DeviceKind::kPlugin, Spec({"a", "a"}), &backend).code(),
            StatusCode::kUnavailable);
  Device* seen = nullptr;
  BackendRegistration plugin;
  plugin.name = "plugin";
  plugin.device = DeviceKind::kPlugin;
  plugin.create = [&seen](const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out) {
    seen = spec.device;
    out->reset(new FakeBackend("plugin", spec));
    return Status::OK();
  };
  registry_.AddBackend(plugin);
  CommunicatorSpec spec = Spec({"a", "a"});
  spec.device = reinterpret_cast<Device*>(0x1000);  // passed through, never used
  ASSERT_TRUE(sel.CreateDeviceBackend(DeviceKind::kPlugin, spec, &backend).ok());
  EXPECT_STREQ(backend->name(), "plugin");
  EXPECT_EQ(seen, spec.device);
  // A kPlugin backend is never a CPU data plane.
  ASSERT_TRUE(job_.settings.Set("HOROVOD_CPU_OPERATIONS", "plugin").ok());
  ProcessSetPlanes planes;
  EXPECT_EQ(Select({"a", "a"}, &planes).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hvda
