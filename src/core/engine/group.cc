// Thread-local group state and the execution of deferred communicator jobs.
#include "core/engine/group.h"

#include <thread>
#include <vector>

#include "core/comm/comm.h"
#include "core/engine/enqueue.h"
#include "util/check.h"

namespace accl {
namespace {

struct PendingJob {
  ncclComm* comm;
  CommJobFn fn;
  CommPin pin;  // the communicator object outlives the queue, even if destroyed meanwhile
};

struct GroupState {
  int depth = 0;
  ncclResult_t error = ncclSuccess;
  std::vector<PendingJob> jobs;
};

thread_local GroupState tGroup;

// Runs a job and publishes its outcome on the communicator (which the caller holds).
ncclResult_t runJob(ncclComm* comm, const CommJobFn& fn) {
  ncclResult_t res;
  try {
    res = fn();
  } catch (...) {
    res = fail(ncclInternalError, "communicator job threw an exception");
  }
  if (res != ncclSuccess) comm->state = CommState::Failed;
  comm->asyncResult = res;
  return res;
}

// Runs the communicator jobs queued in a group (see launchCommJob for where each runs).
ncclResult_t runJobs(std::vector<PendingJob>& jobs, const char* call);
void failJobs(std::vector<PendingJob>& jobs, ncclResult_t res);

}  // namespace

bool inGroup() { return tGroup.depth > 0; }
int groupDepth() { return tGroup.depth; }

void groupStart() { tGroup.depth++; }

void recordGroupError(ncclResult_t res) {
  if (inGroup() && tGroup.error == ncclSuccess && res != ncclSuccess && res != ncclInProgress) tGroup.error = res;
}

namespace {

// Starts a job on the communicator's background thread; the thread keeps `hold` until the job's
// outcome is published.
void startJobThread(ncclComm* comm, CommJobFn fn, CommHold hold) {
  std::lock_guard<std::mutex> lock(comm->jobMutex);
  if (comm->job.joinable()) comm->job.join();
  comm->job = std::thread([comm, fn = std::move(fn), hold = std::move(hold)]() mutable {
    runJob(comm, fn);
    hold.release();  // the last touch of comm: a closer may free it from here on
  });
}

}  // namespace

ncclResult_t launchCommJob(ncclComm* comm, CommJobFn fn) {
  comm->asyncResult = ncclInProgress;
  if (inGroup()) {
    tGroup.jobs.push_back({comm, std::move(fn), CommPin(comm)});
    return comm->blocking() ? ncclSuccess : ncclInProgress;
  }
  CommHold hold;
  ncclResult_t res = hold.acquire("communicator job", comm);
  if (res != ncclSuccess) return res;
  if (comm->blocking()) return runJob(comm, fn);
  startJobThread(comm, std::move(fn), std::move(hold));
  return ncclInProgress;
}

ncclResult_t groupEnd(const char* call) {
  if (tGroup.depth == 0)
    return fail(ncclInvalidUsage, "%s: not in a group (ncclGroupEnd called without a matching ncclGroupStart)",
                call);
  if (--tGroup.depth > 0) return ncclSuccess;

  std::vector<PendingJob> jobs;
  jobs.swap(tGroup.jobs);
  ncclResult_t latched = tGroup.error;
  tGroup.error = ncclSuccess;
  if (latched != ncclSuccess) {
    // A call inside the group failed its checks: nothing queued may run half-way.
    discardGroupTasks();
    failJobs(jobs, latched);
    return latched;
  }
  ncclResult_t jobsResult = runJobs(jobs, call);
  if (jobsResult != ncclSuccess && jobsResult != ncclInProgress) {
    discardGroupTasks();
    return jobsResult;
  }
  // Operations of the group run after its communicator jobs (they only use communicators that
  // were ready when the operation was called).
  ncclResult_t tasksResult = launchGroupTasks();
  return tasksResult != ncclSuccess ? tasksResult : jobsResult;
}

namespace {

// Fails every queued job (nothing of the group runs half-way).
void failJobs(std::vector<PendingJob>& jobs, ncclResult_t res) {
  for (PendingJob& j : jobs) {
    j.comm->state = CommState::Failed;
    j.comm->asyncResult = res;
  }
}

ncclResult_t runJobs(std::vector<PendingJob>& jobs, const char* call) {
  if (jobs.empty()) return ncclSuccess;
  bool anyBlocking = false, anyNonblocking = false;
  for (const PendingJob& j : jobs) (j.comm->blocking() ? anyBlocking : anyNonblocking) = true;
  if (anyBlocking && anyNonblocking) {
    failJobs(jobs, ncclInvalidArgument);
    return fail(ncclInvalidArgument, "%s: a group mixes blocking and nonblocking communicators", call);
  }
  // A communicator destroyed or aborted inside the group fails the whole group: its peers in the
  // other jobs would otherwise wait for it.
  std::vector<CommHold> holds(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    ncclResult_t res = holds[i].acquire(call, jobs[i].comm);
    if (res != ncclSuccess) {
      holds.clear();
      failJobs(jobs, ncclInvalidUsage);
      return fail(ncclInvalidUsage, "%s: comm %p was destroyed or aborted inside the group; its queued work failed",
                  call, static_cast<void*>(jobs[i].comm));
    }
  }

  if (anyNonblocking) {
    for (size_t i = 0; i < jobs.size(); ++i) startJobThread(jobs[i].comm, std::move(jobs[i].fn), std::move(holds[i]));
    return ncclInProgress;
  }

  // Blocking: every job may wait on the others (ranks of one communicator driven from this
  // thread), so each gets a thread; a single job runs inline.
  if (jobs.size() == 1) return runJob(jobs[0].comm, jobs[0].fn);
  std::vector<ncclResult_t> results(jobs.size(), ncclSuccess);
  std::vector<std::thread> threads;
  threads.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i)
    threads.emplace_back([&, i] { results[i] = runJob(jobs[i].comm, jobs[i].fn); });
  for (std::thread& t : threads) t.join();
  for (ncclResult_t r : results)
    if (r != ncclSuccess) return r;
  return ncclSuccess;
}

}  // namespace
}  // namespace accl
