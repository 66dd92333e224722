// Generation: enqueue-time queueing (framework threads); what an op must be is
// checked by BuildRequest (common/request_builder.h).
#include "common/request_builder.h"
#include "common/generation.h"

namespace hvda {
namespace {

// end: the generation whose end st reports (its failure then tells it when
// delivered), or null.
std::shared_ptr<Work> FailedWork(const Status& st, std::shared_ptr<GenerationEnd> end = nullptr) {
  auto w = std::make_shared<Work>(nullptr, std::move(end));
  w->Complete(st);
  return w;
}

}  // namespace

Status Generation::BuildEntry(EnqueueArgs& a, ProcessSetState* ps, TensorEntry* e) {
  HVDA_RETURN_IF_ERROR(BuildRequest(&a, *ps, &e->request));
  e->input = a.input;
  e->output = a.output;
  e->work = std::make_shared<Work>(activity_, end_);
  e->work->SetDriver(cycles_.work_driver());
  e->work->allocate_output = std::move(a.allocate_output);
  if (a.device >= 0) HVDA_RETURN_IF_ERROR(RecordReady(a, e));
  return Status::OK();
}

Status Generation::RecordReady(const EnqueueArgs& a, TensorEntry* e) {
  std::shared_ptr<PluginDevice> device;
  Status bound = accel_->Bind(a.device_type, a.device, &device);
  if (!bound.ok())
    return Status::InvalidArgument("'" + e->request.name + "': " + bound.reason());
  std::unique_ptr<Stream> framework;
  HVDA_RETURN_IF_ERROR(a.stream_framework.empty()
                           ? device->execution().WrapStream(a.stream, &framework)
                           : device->WrapFrameworkStream(a.stream_framework, a.stream, &framework));
  std::unique_ptr<Event> ready;
  HVDA_RETURN_IF_ERROR(device->TakeEvent(&ready));
  Status st = device->execution().RecordEvent(ready.get(), framework.get());
  if (!st.ok()) {
    device->GiveBackEvent(std::move(ready));
    return st;
  }
  // The event, not the wrapper, carries the ordering. It goes back to the
  // device (which it keeps alive) once the entry is done with it.
  Event* raw = ready.release();
  e->ready = std::shared_ptr<Event>(
      raw, [device](Event* ev) { device->GiveBackEvent(std::unique_ptr<Event>(ev)); });
  return Status::OK();
}

Status Generation::Enqueue(std::vector<EnqueueArgs> ops, std::vector<std::shared_ptr<Work>>* works,
                           OpWaiter waiter) {
  works->clear();
  if (ops.empty()) return Status::OK();
  std::vector<TensorEntry> entries(ops.size());
  HVDA_RETURN_IF_ERROR(EnqueueEntries(ops.data(), entries.data(), ops.size(), waiter));
  for (auto& w : entries) works->push_back(std::move(w.work));
  return Status::OK();
}

Status Generation::EnqueueOne(EnqueueArgs op, std::shared_ptr<Work>* work) {
  TensorEntry entry;
  HVDA_RETURN_IF_ERROR(EnqueueEntries(&op, &entry, 1));
  *work = std::move(entry.work);
  return Status::OK();
}

// ops[0..n) -> entries[0..n) (default-constructed), queued as one group. On
// success each entry keeps only its Work (TensorQueue::Add took the rest); on
// a refusal nothing is queued. After a failure of the job, or once the
// generation is ending (NOTE [A deadlock ends the generation] in
// coordinator.h), every op gets a Work already failed with that error.
Status Generation::EnqueueEntries(EnqueueArgs* ops, TensorEntry* entries, size_t n,
                                  OpWaiter waiter) {
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (!EndStatusLocked().ok()) {
      for (size_t i = 0; i < n; ++i) entries[i].work = FailedWork(EndStatusLocked(), end_);
      return Status::OK();
    }
  }
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    const int id = ops[0].process_set_id;
    auto it = sets_.find(id);
    if (it == sets_.end())
      return Status::InvalidArgument("process set " + std::to_string(id) +
                                     " is not registered (was it removed?).");
    ProcessSetState* ps = it->second.get();
    if (!ps->member())
      return Status::InvalidArgument("rank " + std::to_string(job_.topo.rank) +
                                     " is not a member of process set " + std::to_string(id) +
                                     "; only its member ranks may run collectives on it.");
    for (size_t i = 0; i < n; ++i)
      HVDA_RETURN_IF_ERROR(BuildEntry(ops[i], ps, &entries[i]));
    HVDA_RETURN_IF_ERROR(ps->queue.Add(entries, n));
  }
  activity_->NoteActivity();
  cycles_.NoteEnqueued(waiter);
  return Status::OK();
}

std::shared_ptr<Work> Generation::EnqueueJoin(int device) {
  TensorEntry e;
  e.request.type = RequestType::kJoin;
  e.request.name = "__join__";
  e.request.device = device;
  e.work = std::make_shared<Work>(activity_, end_);
  e.work->SetDriver(cycles_.work_driver());
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (!EndStatusLocked().ok()) return FailedWork(EndStatusLocked(), end_);
  }
  std::vector<TensorEntry> v;
  std::shared_ptr<Work> w = e.work;
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    auto it = sets_.find(0);
    if (it == sets_.end())  // stopped (Stop cleared the sets)
      return FailedWork(Status::Aborted("Horovod has been shut down."));
    e.request.rank = it->second->set_rank;
    v.push_back(std::move(e));
    Status st = it->second->queue.Add(std::move(v));
    if (!st.ok()) return FailedWork(Status::InvalidArgument("join() is already in progress on this rank."));
  }
  activity_->NoteActivity();
  cycles_.Wake();
  return w;
}

Status Generation::EnqueueBarrier(int process_set_id, std::shared_ptr<Work>* work) {
  EnqueueArgs a;
  a.type = RequestType::kBarrier;
  a.name = "__barrier__";
  a.process_set_id = process_set_id;
  a.dtype = DataType::kUInt8;
  std::vector<std::shared_ptr<Work>> works;
  std::vector<EnqueueArgs> ops{a};
  HVDA_RETURN_IF_ERROR(Enqueue(std::move(ops), &works));
  *work = works[0];
  return Status::OK();
}

}  // namespace hvda
