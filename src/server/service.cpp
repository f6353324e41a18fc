#include "server/service.h"

#include <filesystem>

#include "runtime/prompt.h"
#include "server/completion_endpoint.h"
#include "server/info_endpoints.h"
#include "server/openai_response.h"

namespace kite {

namespace {

// Compares in time that does not depend on where the texts differ.
bool SameSecret(const std::string& given, const std::string& expected) {
  unsigned char differ = given.size() != expected.size();
  for (size_t i = 0; i < given.size(); ++i) {
    differ |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return differ == 0;
}

// The model's name as /v1/models lists it: the file or folder name, without .gguf.
std::string ModelId(const std::string& path) {
  std::filesystem::path model(path);
  if (!model.has_filename()) model = model.parent_path();
  std::string name = model.filename().string();
  if (name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name.empty() ? "kite" : name;
}

}  // namespace

Result<std::unique_ptr<Service>> Service::Listen(ServeOptions options) {
  std::unique_ptr<Service> service(new Service());
  service->state_.options = std::move(options);
  const ServeOptions& o = service->state_.options;
  service->http_ = KITE_TRY(HttpServer::Create(o.limits));
  service->state_.http = service->http_.get();
  if (o.tcp) {
    ListenSocket tcp = KITE_TRY(ListenSocket::Tcp(o.host, o.port));
    service->port_ = tcp.port();
    service->sockets_.push_back(std::move(tcp));
  }
  if (!o.unix_path.empty())
    service->sockets_.push_back(KITE_TRY(ListenSocket::Unix(o.unix_path, o.unix_mode)));
  if (service->sockets_.empty())
    return InvalidInput("serve: nothing to listen on (give --port or --unix PATH)");
  for (ListenSocket& socket : service->sockets_) {
    service->addresses_.push_back(socket.Describe());
    KITE_RETURN_IF_ERROR(service->http_->Listen(socket));
  }
  service->AddRoutes();
  KITE_RETURN_IF_ERROR(service->http_->Start());
  return service;
}

Service::~Service() { Shutdown(std::chrono::milliseconds(0)); }

void Service::AddRoutes() {
  ServiceState* state = &state_;
  // Every endpoint but /health asks for the key when one is set.
  auto guarded = [state](auto handler) -> HttpHandler {
    return [state, handler](const HttpRequest& request, std::shared_ptr<HttpReply> reply) {
      const std::string& key = state->options.api_key;
      if (!key.empty()) {
        const std::string* authorization = request.Header("Authorization");
        if (!authorization || !authorization->starts_with("Bearer ") ||
            !SameSecret(authorization->substr(7), key)) {
          ApiError error =
              MakeApiError(401,
                           authorization ? "Incorrect API key provided"
                                         : "No API key provided (Authorization: Bearer KEY)",
                           "invalid_api_key");
          HttpResponse response = ErrorResponse(error);
          response.headers.emplace_back("WWW-Authenticate", "Bearer");
          return reply->Send(std::move(response));
        }
      }
      handler(*state, request, std::move(reply));
    };
  };
  auto completion = [](CompletionKind kind) {
    return
        [kind](ServiceState& state, const HttpRequest& request, std::shared_ptr<HttpReply> reply) {
          HandleCompletion(state, kind, request, std::move(reply));
        };
  };
  http_->Route("POST", "/v1/chat/completions", guarded(completion(CompletionKind::kChat)));
  http_->Route("POST", "/v1/completions", guarded(completion(CompletionKind::kText)));
  http_->Route("GET", "/v1/models", guarded(HandleModels));
  http_->Route("POST", "/tokenize", guarded(HandleTokenize));
  http_->Route("POST", "/detokenize", guarded(HandleDetokenize));
  http_->Route("GET", "/status", guarded(HandleStatus));
  http_->Route("GET", "/metrics", guarded(HandleMetrics));
  http_->Route("GET", "/health",
               [state](const HttpRequest& request, std::shared_ptr<HttpReply> reply) {
                 HandleHealth(*state, request, std::move(reply));
               });
  http_->SetErrorPage([](int status, const std::string& message) {
    return ErrorResponse(
        MakeApiError(status, message, status == 404 ? "unknown_url" : "method_not_allowed"));
  });
}

Status Service::Load() {
  return Adopt(
      KITE_TRY(Engine::Load(state_.options.settings.model, state_.options.settings.engine)));
}

Status Service::Adopt(std::unique_ptr<Engine> engine) {
  // The draft model (--spec draft) loads with the engine's own options, so that its KV pool
  // holds a sequence for every slot; outside the lock, so a Shutdown need not wait for it.
  RunSettings settings = state_.options.settings;
  settings.engine = engine->options();
  std::unique_ptr<SpeculativeSetup> speculative =
      KITE_TRY(SpeculativeSetup::Create(settings, *engine));
  std::lock_guard lock(mutex_);
  if (shut_down_) return Unsupported("serve: shut down while the model was loading");
  state_.scheduler =
      KITE_TRY(Scheduler::Create(*engine, state_.options.scheduler, speculative.get()));
  state_.speculative = std::move(speculative);
  auto chat_template =
      SelectChatTemplate(engine->tokenizer(), state_.options.settings.chat_template);
  if (chat_template) {
    state_.chat_template.emplace(std::move(*chat_template));
  } else {
    state_.chat_template_error =
        chat_template.error().message + " (start kite serve with --chat-template NAME)";
  }
  state_.engine = std::move(engine);
  state_.model_id = ModelId(state_.options.settings.model);
  state_.created = UnixSeconds();
  state_.ready.store(true, std::memory_order_release);
  return Ok();
}

void Service::Shutdown(std::chrono::milliseconds drain) {
  std::lock_guard lock(mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  http_->StopAccepting();
  if (state_.scheduler)
    state_.scheduler->Shutdown();  // every request ends; streams get their last event
  http_->Stop(drain);
  sockets_.clear();  // removes the Unix socket file
}

}  // namespace kite
