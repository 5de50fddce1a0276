#pragma once
// NODUS_TIMING=1: each named step of a command, one line on stderr with the milliseconds since
// the process's first step, since the step before, and the CPU time this process spent since
// then, which other processes' load inflates less, and the minor page faults it took since then
// (each costs microseconds on a VM) ("nodus: timing: 4.12 ms (+0.35, cpu +0.30, faults +12)
// store opened"). It is how bench/RESULTS.md's launch profile is taken: strace slows every system
// call and perf spreads the time over the kernel's page faults; the steps say which part of nodus's
// own work costs what. Off, a step costs one branch on a flag read once.

namespace nodus::timing {

void step(const char* name);

}  // namespace nodus::timing
