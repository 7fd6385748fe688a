#include "service/plan_workers.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace memgate {

PlanWorkers::PlanWorkers(int threads, size_t queue, int nice)
    : max_queued_(queue) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, nice] { Loop(nice); });
  }
}

PlanWorkers::~PlanWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool PlanWorkers::TrySubmit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queued_.size() >= max_queued_) return false;
    queued_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

void PlanWorkers::Loop(int nice) {
  // Best effort: without the permission to lower priority, plans still run,
  // only without the advantage for Admit.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
    if (queued_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> task = std::move(queued_.front());
    queued_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace memgate
