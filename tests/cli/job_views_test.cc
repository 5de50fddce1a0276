// The JSON form of a job (cli/job_views.h): what its live figures say while it is not running.

#include "cli/job_views.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/cost.h"
#include "core/job.h"

namespace nodus {
namespace {

// Issue 30 case 8: a requeued Slurm job waiting in the queue showed a cost that grew with its
// queue time (the clock ran from its first start). Waiting, it costs what its runs cost.
TEST(JobJson, ARequeuedJobWaitingInTheQueueCostsWhatItsRunsCostNotItsQueueTime) {
  JobRecord job;
  job.gpu_count = 1;
  job.rate_per_gpu_hour = 3600;  // $1 a second
  job.started_at = unix_now() - 100;
  job.cost = 5;  // its first run: 5 s
  job.state = JobState::kWaiting;
  EXPECT_DOUBLE_EQ(cli::job_json(job)["cost_usd"].get<double>(), 5.0);
  // Running, the clock is the figure.
  job.state = JobState::kRunning;
  EXPECT_GE(cli::job_json(job)["cost_usd"].get<double>(), 99.0);
}

}  // namespace
}  // namespace nodus
