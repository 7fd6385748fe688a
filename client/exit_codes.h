#ifndef MEMGATE_CLIENT_EXIT_CODES_H_
#define MEMGATE_CLIENT_EXIT_CODES_H_

// The contract with schedulers' pre-submit hooks: they read these codes.
namespace memgate::cli {

inline constexpr int kExitAdmit = 0;        // also: success of a report
inline constexpr int kExitRefuse = 1;       // the job would not fit
inline constexpr int kExitInvalid = 2;      // bad flags or job
inline constexpr int kExitUnavailable = 3;  // the service could not answer

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_EXIT_CODES_H_
