#ifndef MEMGATE_PROTO_REQUEST_LIMITS_H_
#define MEMGATE_PROTO_REQUEST_LIMITS_H_

// What memgate.v1's clients send and its servers read.

#include <cstddef>

namespace memgate {

// The largest request a memgate client sends, and the least a
// memgate_server accepts (--max_message_bytes; its default): no request a
// client sent is refused for its size, which gRPC reports as
// RESOURCE_EXHAUSTED, a failure to answer that a site's on-unavailable
// policy may admit. A larger job is refused by the client as invalid
// before it is sent. Jobs memgate can judge are far smaller (a DeepSeek-V3
// launch's, with its layer pattern and uneven stages, is under 1 KiB);
// only lists of thousands of stages or layers, or long names, come near.
inline constexpr size_t kMaxRequestBytes = 64 * 1024;

}  // namespace memgate

#endif  // MEMGATE_PROTO_REQUEST_LIMITS_H_
