#include "server/fair_queue.h"

#include <utility>

#include "server/request_run.h"

namespace kite {

void FairQueue::Push(std::shared_ptr<RequestRun> run) {
  const std::string& name = run->request().client;
  auto found = by_name_.find(name);
  if (found == by_name_.end()) {
    // A client with nothing waiting takes its turn after every client already waiting.
    turns_.push_back(Client{.name = name, .waiting = {}});
    found = by_name_.emplace(name, std::prev(turns_.end())).first;
  }
  found->second->waiting.push_back(std::move(run));
  ++size_;
}

std::shared_ptr<RequestRun> FairQueue::Pop() {
  if (turns_.empty()) return nullptr;
  Client& client = turns_.front();
  std::shared_ptr<RequestRun> run = std::move(client.waiting.front());
  client.waiting.pop_front();
  --size_;
  if (client.waiting.empty()) {
    by_name_.erase(client.name);
    turns_.pop_front();
  } else {
    turns_.splice(turns_.end(), turns_, turns_.begin());  // to the back of the round
  }
  return run;
}

std::deque<std::shared_ptr<RequestRun>> FairQueue::RemoveIf(
    const std::function<bool(const RequestRun&)>& drop) {
  std::deque<std::shared_ptr<RequestRun>> removed;
  for (auto client = turns_.begin(); client != turns_.end();) {
    std::deque<std::shared_ptr<RequestRun>> kept;
    for (auto& run : client->waiting) {
      (drop(*run) ? removed : kept).push_back(std::move(run));
    }
    size_ -= client->waiting.size() - kept.size();
    client->waiting = std::move(kept);
    if (client->waiting.empty()) {
      by_name_.erase(client->name);
      client = turns_.erase(client);
    } else {
      ++client;
    }
  }
  return removed;
}

std::deque<std::shared_ptr<RequestRun>> FairQueue::Clear() {
  return RemoveIf([](const RequestRun&) { return true; });
}

}  // namespace kite
