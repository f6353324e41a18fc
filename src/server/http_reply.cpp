#include "server/http_reply.h"

#include "server/http_server.h"

namespace kite {

void HttpReply::Send(HttpResponse response) {
  {
    std::lock_guard lock(mutex_);
    if (started_ || gone()) return;
    started_ = ended_ = true;
    ops_.push_back(std::move(response));
  }
  server_->Wake(shared_from_this());
}

void HttpReply::Start(int status, HttpHeaders headers) {
  {
    std::lock_guard lock(mutex_);
    if (started_ || gone()) return;
    started_ = true;
    ops_.push_back(StartOp{status, std::move(headers)});
  }
  server_->Wake(shared_from_this());
}

bool HttpReply::Write(std::string data) {
  {
    std::lock_guard lock(mutex_);
    if (!started_ || ended_ || gone()) return false;
    if (data.empty()) return true;
    ops_.push_back(ChunkOp{std::move(data)});
  }
  server_->Wake(shared_from_this());
  return true;
}

void HttpReply::End() {
  {
    std::lock_guard lock(mutex_);
    if (!started_ || ended_ || gone()) return;
    ended_ = true;
    ops_.push_back(EndOp{});
  }
  server_->Wake(shared_from_this());
}

void HttpReply::OnGone(std::function<void()> on_gone) {
  {
    std::lock_guard lock(mutex_);
    if (!gone()) {
      on_gone_ = std::move(on_gone);
      return;
    }
  }
  on_gone();
}

}  // namespace kite
