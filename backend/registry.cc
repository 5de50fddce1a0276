#include <string>

#include "backend/backend.h"
#include "backend/local/local_backend.h"
#include "backend/slurm/slurm_backend.h"
#include "core/error.h"

namespace nodus::backend {

std::vector<std::string> backend_names() { return {"local", "slurm"}; }

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "local") return make_local_backend();
  if (name == "slurm") return make_slurm_backend();
  throw Fatal("--backend: unknown backend '" + std::string(name) + "': expected local or slurm");
}

}  // namespace nodus::backend
