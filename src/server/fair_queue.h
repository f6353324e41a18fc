// The scheduler's waiting room: requests wait here for a slot, served round robin across
// clients (one request of each client with requests waiting, in the order the clients first
// came, then around again) and in arrival order within a client. So a client that sends a
// burst of 50 requests delays another client's one request by at most one of them, not 50.
// Not thread-safe: the scheduler guards it with its mutex.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

namespace kite {

class RequestRun;

class FairQueue {
 public:
  void Push(std::shared_ptr<RequestRun> run);
  // The next request to admit, or nullptr when none waits.
  std::shared_ptr<RequestRun> Pop();
  // Removes the requests `drop` picks and returns them, in queue order per client.
  std::deque<std::shared_ptr<RequestRun>> RemoveIf(
      const std::function<bool(const RequestRun&)>& drop);
  // Removes and returns every waiting request.
  std::deque<std::shared_ptr<RequestRun>> Clear();
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Client {
    std::string name;
    std::deque<std::shared_ptr<RequestRun>> waiting;
  };
  // Clients with requests waiting, the next to be served first.
  std::list<Client> turns_;
  std::unordered_map<std::string, std::list<Client>::iterator> by_name_;
  size_t size_ = 0;
};

}  // namespace kite
