#!/usr/bin/env bash
# Installs what nodus needs from Debian 12's packages (as root, or with sudo).
#   build: compiler, CMake, ccache, the libraries nodus builds against
#   demo:  build + PyTorch for examples/train.py
#   test:  demo + Chromium (report tests), clang-format and shellcheck (scripts/lint.sh), and the
#          Slurm test cluster's packages (scripts/slurm-dev-cluster.sh; it installs them itself
#          when missing): Slurm 22.05, slurmrestd, munge, slurmdbd and MariaDB for accounting;
#          podman, runc, catatonit (podman run --init's init; podman only recommends it) and
#          busybox-static for the live --image tests (docs/containers.md)
set -euo pipefail
profile=${1:-build}
pkgs=(g++ cmake ninja-build pkg-config libcurl4-openssl-dev nlohmann-json3-dev libcli11-dev
      libboost1.81-dev libsqlite3-dev libre2-dev libyaml-cpp-dev libgtest-dev libgmock-dev help2man
      ccache)
case "$profile" in
  build) ;;
  demo) pkgs+=(python3-torch) ;;
  test)
    pkgs+=(python3-torch chromium procps clang-format shellcheck tmux curl slurm-wlm slurmrestd munge
           slurm-wlm-jwt-plugin slurmdbd mariadb-server podman runc catatonit busybox-static) ;;
  *) echo "install-deps.sh: unknown profile '$profile': expected build, demo or test" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
