#ifndef MEMGATE_SERVICE_ARENA_ALLOCATOR_H_
#define MEMGATE_SERVICE_ARENA_ALLOCATOR_H_

// Request and response of one call on one protobuf arena whose first block
// lives inside the holder, and holders recycled per thread: a whole Admit
// (request, estimate, decision, their strings) normally costs no heap
// allocation at all. See bench/RESULTS.md for what this bought.

#include <vector>

#include "google/protobuf/arena.h"
#include "grpcpp/support/message_allocator.h"

namespace memgate {

template <typename Request, typename Response>
class ArenaMessageAllocator
    : public grpc::MessageAllocator<Request, Response> {
 public:
  grpc::MessageHolder<Request, Response>* AllocateMessages() override {
    std::vector<Holder*>& cache = Cache();
    Holder* holder;
    if (cache.empty()) {
      holder = new Holder();
    } else {
      holder = cache.back();
      cache.pop_back();
    }
    holder->Prepare();
    return holder;
  }

 private:
  // Holders kept per thread for reuse; beyond this many, they are freed.
  static constexpr size_t kCachedPerThread = 64;

  class Holder : public grpc::MessageHolder<Request, Response> {
   public:
    Holder() : arena_(Options(initial_block_)) {}

    void Prepare() {
      this->set_request(
          google::protobuf::Arena::CreateMessage<Request>(&arena_));
      this->set_response(
          google::protobuf::Arena::CreateMessage<Response>(&arena_));
    }

    // Called on whichever thread finishes the call: the arena is emptied
    // (keeping its first block) and the holder cached there.
    void Release() override {
      arena_.Reset();
      std::vector<Holder*>& cache = Cache();
      if (cache.size() < kCachedPerThread) {
        cache.push_back(this);
      } else {
        delete this;
      }
    }

   private:
    static google::protobuf::ArenaOptions Options(char* block) {
      google::protobuf::ArenaOptions options;
      options.initial_block = block;
      options.initial_block_size = sizeof(initial_block_);
      return options;
    }
    // Enough for a decision with a few suggestions; larger ones spill.
    alignas(8) char initial_block_[8192];
    google::protobuf::Arena arena_;
  };

  // One cache per thread and message type; the holders it keeps at thread
  // exit are freed with it.
  static std::vector<Holder*>& Cache() {
    struct Owned {
      std::vector<Holder*> holders;
      ~Owned() {
        for (Holder* h : holders) delete h;
      }
    };
    thread_local Owned cache;
    return cache.holders;
  }
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_ARENA_ALLOCATOR_H_
