// Thread-local group state and the execution of deferred communicator jobs.
#include "core/group.h"

#include <thread>
#include <vector>

#include "core/comm.h"
#include "core/enqueue.h"
#include "util/check.h"

namespace accl {
namespace {

struct PendingJob {
  ncclComm* comm;
  CommJobFn fn;
};

struct GroupState {
  int depth = 0;
  ncclResult_t error = ncclSuccess;
  std::vector<PendingJob> jobs;
};

thread_local GroupState tGroup;

// Runs a job and publishes its outcome on the communicator.
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

}  // namespace

bool inGroup() { return tGroup.depth > 0; }
int groupDepth() { return tGroup.depth; }

void groupStart() { tGroup.depth++; }

void recordGroupError(ncclResult_t res) {
  if (inGroup() && tGroup.error == ncclSuccess && res != ncclSuccess && res != ncclInProgress) tGroup.error = res;
}

ncclResult_t launchCommJob(ncclComm* comm, CommJobFn fn) {
  comm->asyncResult = ncclInProgress;
  if (inGroup()) {
    tGroup.jobs.push_back({comm, std::move(fn)});
    return comm->blocking() ? ncclSuccess : ncclInProgress;
  }
  if (comm->blocking()) return runJob(comm, fn);
  std::lock_guard<std::mutex> lock(comm->jobMutex);
  if (comm->job.joinable()) comm->job.join();
  comm->job = std::thread([comm, fn = std::move(fn)] { runJob(comm, fn); });
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
    for (PendingJob& j : jobs) {
      j.comm->state = CommState::Failed;
      j.comm->asyncResult = latched;
    }
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

ncclResult_t runJobs(std::vector<PendingJob>& jobs, const char* call) {
  if (jobs.empty()) return ncclSuccess;
  bool anyBlocking = false, anyNonblocking = false;
  for (const PendingJob& j : jobs) (j.comm->blocking() ? anyBlocking : anyNonblocking) = true;
  if (anyBlocking && anyNonblocking) {
    for (PendingJob& j : jobs) {
      j.comm->state = CommState::Failed;
      j.comm->asyncResult = ncclInvalidArgument;
    }
    return fail(ncclInvalidArgument, "%s: a group mixes blocking and nonblocking communicators", call);
  }

  if (anyNonblocking) {
    for (PendingJob& j : jobs) {
      std::lock_guard<std::mutex> lock(j.comm->jobMutex);
      if (j.comm->job.joinable()) j.comm->job.join();
      j.comm->job = std::thread([comm = j.comm, fn = std::move(j.fn)] { runJob(comm, fn); });
    }
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
