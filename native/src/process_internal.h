/* process_internal.h - results the sandbox layer builds or amends (internal). */
#ifndef A3S_PROCESS_INTERNAL_H
#define A3S_PROCESS_INTERNAL_H

#include "internal.h"

/* A result for a run that never started: empty output, the given exit code
 * and flags, and setup_error (copied; may be NULL). NULL if out of memory. */
a3s_process_result *a3s_process_result_synthetic(int32_t exit_code, uint64_t flags,
                                                 const char *setup_error);

/* Sets exit_code and term_signal, adds `flags`, and replaces setup_error
 * when it is non-NULL (copied). */
int a3s_process_result_override(a3s_process_result *r, int32_t exit_code, int32_t term_signal,
                                 uint64_t flags, const char *setup_error);

#endif
