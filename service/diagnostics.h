#ifndef MEMGATE_SERVICE_DIAGNOSTICS_H_
#define MEMGATE_SERVICE_DIAGNOSTICS_H_

// memgate_server's human-readable messages, kept apart from its decision
// log: everything here (memgate's own messages, and gRPC's and protobuf's
// logs once routed) goes to standard error, one write(2) per line, prefixed
// "memgate_server: ", while standard output carries JSON lines only.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace memgate {

// One line on standard error. Thread-safe; never blocks on a lock held
// across I/O.
void Diagnose(absl::string_view message);

// Routes gRPC's and protobuf's log output through Diagnose (gRPC's below
// ERROR only when GRPC_VERBOSITY asks for it). Call once, before serving.
void RouteLibraryLogs();

// How often gRPC has reported that a listener failed to accept a
// connection ("Failed accept4", e.g. EMFILE): gRPC 1.51 then stops
// accepting on that listener for good, and the server must re-create it.
// Counted whether or not RouteLibraryLogs was called by this caller.
uint64_t AcceptFailureCount();

// gRPC's most recent ERROR messages (a few, joined by "; "), to explain a
// failure its API reports only as "did not start" (e.g. a TLS key that
// does not match its certificate).
std::string RecentLibraryErrors();

}  // namespace memgate

#endif  // MEMGATE_SERVICE_DIAGNOSTICS_H_
