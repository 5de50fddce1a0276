#pragma once
// The Slurm backend: runs jobs on a Slurm cluster through slurmrestd. Configured from the
// environment (NODUS_SLURM_URL, SLURM_JWT, NODUS_SLURM_USER, ... see core/config.cc) when first
// used, so building it never fails; a missing or bad setting is an error of the first call.

#include <chrono>
#include <memory>

#include "backend/backend.h"

namespace nodus::backend {

std::unique_ptr<Backend> make_slurm_backend();

namespace slurm {

class RestClient;

// How wait() paces itself.
struct WaitTiming {
  std::chrono::milliseconds poll{1000};              // GET /job/{id} this often
  std::chrono::milliseconds max_backoff{5000};       // poll interval ceiling while requests fail
  std::chrono::milliseconds output_tick{200};        // read the output file this often when shown
  std::chrono::milliseconds quiet_failures{30'000};  // report failures after this long
  std::chrono::milliseconds lost_after{600'000};     // then give up on the job
  std::chrono::milliseconds submit_backoff{500};     // first delay between submit attempts
  int submit_attempts = 4;
  std::chrono::milliseconds cancel_backoff{200};       // first delay between cancel checks
  std::chrono::milliseconds duplicate_window{60'000};  // after a lost submit answer, look for
                                                       // a late copy of the job this long
};

// A backend on a given client (tests use a fake HTTP client underneath).
std::unique_ptr<Backend> make_slurm_backend(std::unique_ptr<RestClient> client,
                                            WaitTiming timing = {});

}  // namespace slurm
}  // namespace nodus::backend
