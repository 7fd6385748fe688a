#ifndef MEMGATE_SERVICE_UNKNOWN_FIELDS_H_
#define MEMGATE_SERVICE_UNKNOWN_FIELDS_H_

// A request from a client built against a newer memgate.v1 may carry
// fields this server does not know. Protobuf keeps them as unknown fields
// and the estimator never sees them: a newer memory setting (say, a
// sharding factor) would be read past and the job answered without it,
// an ADMIT the client's own memgate would not give. The server refuses
// such requests instead, naming the field.

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace memgate {

// INVALID_ARGUMENT naming the first unknown field of `message` or of a
// message it holds, by its path from `path` ("job.parallel") and number;
// OK when there is none. Visits each set message once: work in proportion
// to the request, whose size the server bounds before it is parsed.
absl::Status RefuseUnknownFields(const google::protobuf::Message& message,
                                 absl::string_view path);

}  // namespace memgate

#endif  // MEMGATE_SERVICE_UNKNOWN_FIELDS_H_
