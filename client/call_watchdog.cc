#include "client/call_watchdog.h"

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

namespace memgate::cli {
namespace {

// What the handler may touch: written before the timer is armed.
char g_message[512];
size_t g_message_length = 0;
volatile sig_atomic_t g_exit_code = 3;

void OnAlarm(int) {
  // Async-signal-safe only: write(2) and _exit(2).
  ssize_t ignored = write(STDERR_FILENO, g_message, g_message_length);
  (void)ignored;
  _exit(g_exit_code);
}

void SetTimer(absl::Duration limit) {
  itimerval timer{};
  timer.it_value = absl::ToTimeval(limit);
  setitimer(ITIMER_REAL, &timer, nullptr);
}

}  // namespace

CallWatchdog::CallWatchdog(absl::Duration limit, const std::string& message,
                           int exit_code) {
  g_message_length = std::min(message.size(), sizeof(g_message));
  std::memcpy(g_message, message.data(), g_message_length);
  g_exit_code = exit_code;
  struct sigaction action {};
  action.sa_handler = OnAlarm;
  sigemptyset(&action.sa_mask);
  sigaction(SIGALRM, &action, nullptr);
  SetTimer(std::max(limit, absl::Milliseconds(1)));
}

CallWatchdog::~CallWatchdog() {
  SetTimer(absl::ZeroDuration());
  signal(SIGALRM, SIG_DFL);
}

}  // namespace memgate::cli
