/* process_internal.h - output capture and results the sandbox layer builds or amends
 * (internal). */
#ifndef A3S_PROCESS_INTERNAL_H
#define A3S_PROCESS_INTERNAL_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>

#define A3S_CAPTURE_CHUNK 65536 /* bytes a3s_capture_read reads at once */

/* One output stream being drained: the first max/2 bytes are kept (head),
 * then a ring of the last max - max/2 (tail); every byte is counted. */
struct a3s_capture {
    int fd; /* read end (non-blocking); -1 once at EOF or abandoned */
    size_t head_cap, tail_cap;
    char *head;
    size_t head_len, head_alloc;
    char *tail; /* ring of tail_cap bytes; grown lazily until it first wraps */
    size_t tail_start, tail_len, tail_alloc;
    uint64_t total;
    bool oom; /* storing stopped; reading and counting go on */
};

/* Takes ownership of fd; max_output_bytes 0 means the default. */
void a3s_capture_init(struct a3s_capture *c, int fd, uint64_t max_output_bytes);
/* Reads what is available once into buf (A3S_CAPTURE_CHUNK bytes of
 * scratch); closes the fd at end of file or on a hard error. */
void a3s_capture_read(struct a3s_capture *c, char *buf);
/* Closes the fd (if still open) and frees the buffers. */
void a3s_capture_release(struct a3s_capture *c);

/* A result from two drained captures (their buffers move into it; release
 * the captures afterwards as usual): head [marker] tail per stream, the
 * truncation flags added to `flags`, setup_error copied (may be NULL).
 * NULL if memory ran out (also when a capture ran out of it). */
a3s_process_result *a3s_process_result_captured(struct a3s_capture *out, struct a3s_capture *err,
                                                int32_t exit_code, int32_t term_signal,
                                                uint64_t flags, uint64_t duration_us, int32_t pid,
                                                const char *setup_error);

/* A result for a run that never started: empty output, the given exit code
 * and flags, and setup_error (copied; may be NULL). NULL if out of memory. */
a3s_process_result *a3s_process_result_synthetic(int32_t exit_code, uint64_t flags,
                                                 const char *setup_error);

/* Sets exit_code and term_signal, adds `flags`, and replaces setup_error
 * when it is non-NULL (copied). */
int a3s_process_result_override(a3s_process_result *r, int32_t exit_code, int32_t term_signal,
                                 uint64_t flags, const char *setup_error);

/* Replaces the duration (for the sandbox: from the call, planning included). */
void a3s_process_result_set_duration(a3s_process_result *r, uint64_t duration_us);

/* Replaces the result's list of what the sandbox neutralized (copied; NULL
 * clears it): one line per item, see a3s_process_result_view.neutralized. */
int a3s_process_result_set_neutralized(a3s_process_result *r, const char *text);

#endif
