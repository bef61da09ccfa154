// The loaders' module watchers (nvmeof_loader.cc, lifecycle_loader.cc): a thread that calls
// `poll` every `period` until stopped. The call runs with no lock held, so Stop only waits for
// a call in progress, and a long call (a re-plan's trial loads, seconds under emulation, or
// on 5.10 where hooks without module BTF are tried again on every controller change) returns
// early once stopping(): a SIGTERM must not wait for them (the VM suite bounds the exit at 2 s).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace nvmeof {

class Poller {
 public:
  Poller() = default;
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;
  ~Poller() { Stop(); }

  // Starts the thread; once.
  void Start(std::chrono::milliseconds period, std::function<void()> poll) {
    thread_ = std::thread([this, period, poll = std::move(poll)] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, period, [this] { return stopping(); })) {
        lock.unlock();
        poll();
        lock.lock();
      }
    });
  }

  // Asks the thread to stop and waits for the call in progress, if any.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  bool stopping() const { return stop_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace nvmeof
