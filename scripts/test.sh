#!/usr/bin/env bash
# Installs what the tests need, builds nodus and runs every test through ctest. The Slurm tests
# get a real one-node cluster (scripts/slurm-dev-cluster.sh), started here and stopped after.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh test
bash scripts/build.sh
cluster_started=0
if bash scripts/slurm-dev-cluster.sh start; then
  cluster_started=1
else
  echo "test.sh: the Slurm dev cluster did not start; the Slurm tests will say so" >&2
fi
stop_cluster() { [ "$cluster_started" = 1 ] && bash scripts/slurm-dev-cluster.sh stop >/dev/null 2>&1 || true; }
trap stop_cluster EXIT
ctest --test-dir build --output-on-failure -j2 --timeout 600
