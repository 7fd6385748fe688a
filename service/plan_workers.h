#ifndef MEMGATE_SERVICE_PLAN_WORKERS_H_
#define MEMGATE_SERVICE_PLAN_WORKERS_H_

// A small, bounded pool for the service's one expensive call. A plan takes
// up to about 0.1 s of CPU (planner/planner.h bounds it); run on gRPC's
// callback threads, a few at once would hold the threads and cores that
// Admit and health checks need. Here at most `threads` plans run at once,
// at a lower CPU priority than the rest of the server, and at most
// `queue` wait; more are refused at once (TrySubmit returns false), never
// queued without bound.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace memgate {

class PlanWorkers {
 public:
  // `nice` is added to the workers' scheduling niceness (Linux schedules
  // threads individually): 10 lets Admit win the cores under contention.
  PlanWorkers(int threads, size_t queue, int nice = 10);
  // Runs every task already accepted, then joins the threads.
  ~PlanWorkers();

  PlanWorkers(const PlanWorkers&) = delete;
  PlanWorkers& operator=(const PlanWorkers&) = delete;

  // Queues `task`; false (and `task` dropped) when `queue` tasks already
  // wait. Thread-safe.
  bool TrySubmit(std::function<void()> task);

 private:
  void Loop(int nice);

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queued_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_PLAN_WORKERS_H_
