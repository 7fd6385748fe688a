#ifndef MEMGATE_SERVICE_ARENA_ALLOCATOR_H_
#define MEMGATE_SERVICE_ARENA_ALLOCATOR_H_

// Request and response of one call on one protobuf arena, whose first block
// lives inside the holder: a whole Admit (request, estimate, decision, their
// strings) costs one allocation instead of dozens. See bench/RESULTS.md.

#include "google/protobuf/arena.h"
#include "grpcpp/support/message_allocator.h"

namespace memgate {

template <typename Request, typename Response>
class ArenaMessageAllocator
    : public grpc::MessageAllocator<Request, Response> {
 public:
  grpc::MessageHolder<Request, Response>* AllocateMessages() override {
    return new Holder();
  }

 private:
  class Holder : public grpc::MessageHolder<Request, Response> {
   public:
    Holder() : arena_(Options(initial_block_)) {
      this->set_request(
          google::protobuf::Arena::CreateMessage<Request>(&arena_));
      this->set_response(
          google::protobuf::Arena::CreateMessage<Response>(&arena_));
    }
    void Release() override { delete this; }

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
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_ARENA_ALLOCATOR_H_
