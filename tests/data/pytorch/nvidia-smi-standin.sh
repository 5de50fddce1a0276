#!/bin/sh
# A stand-in for `nvidia-smi --query-gpu=... -lms N` (NODUS_NVIDIA_SMI points here in tests):
# one CSV line for GPU 0 every N ms at STANDIN_UTIL percent utilization (default 40).
ms=1000
while [ $# -gt 0 ]; do
  if [ "$1" = "-lms" ]; then ms=$2; shift; fi
  shift
done
util=${STANDIN_UTIL:-40}
sleep_s=$(awk "BEGIN { print $ms / 1000 }")
while :; do
  printf '%s, 0, %s, 5, 1000, 100.00, 1500, 4\n' "$(date -u '+%Y/%m/%d %H:%M:%S.%3N')" "$util" || exit 0
  sleep "$sleep_s"
done
