// Force-included (bench_kernels/smpi/CMakeLists.txt) into every source of
// topotune-bench-smpi, right after SimGrid's smpi_helpers.h, which smpicxx
// force-includes first.
//
// smpi_helpers.h defines exit(x) as a one-argument function-like macro, so
// that a rank calling exit() ends only itself and not the whole simulation.
// The preprocessor then rewrites every `exit(` token, and CLI11 declares, and
// the driver calls, CLI::App::exit(error, out, err) with three arguments,
// which no longer compiles ("macro exit passed 3 arguments"). topotune code
// never calls ::exit() (ranks return from main), so the macro is dropped.
//
// The other macros of smpi_helpers.h stay: sleep, usleep, gettimeofday,
// clock_gettime and nanosleep read and advance the simulated clock, and the
// malloc family only matters for SMPI's shared-malloc options (the kernels
// allocate with operator new, which they do not intercept).
#pragma once

#undef exit
