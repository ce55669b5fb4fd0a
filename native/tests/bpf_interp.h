/* bpf_interp.h - a classic-BPF interpreter for seccomp filters, for tests.
 *
 * Written independently of the generator in src/seccomp_linux.c: it knows
 * only the instructions a seccomp filter of ours may contain and refuses
 * everything else, so a generator that starts emitting something new fails
 * the tests until the interpreter is taught it on purpose.
 *
 * Supported: BPF_LD|BPF_W|BPF_ABS, BPF_ALU|BPF_AND|BPF_K, BPF_JMP|BPF_JA,
 * BPF_JMP|{BPF_JEQ,BPF_JGT,BPF_JGE,BPF_JSET}|BPF_K, BPF_RET|BPF_K.
 */
#ifndef A3S_TEST_BPF_INTERP_H
#define A3S_TEST_BPF_INTERP_H

#if defined(__linux__)

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>

/* Checks the whole program the way the kernel's loader does for the
 * instructions above: 1..BPF_MAXINSNS instructions, every opcode known,
 * every jump target inside the program, every load 4-byte aligned and
 * inside struct seccomp_data, and the last instruction a return.
 * Returns 0, or -1 with *why (static text) and *where (the instruction). */
int bpf_interp_check(const struct sock_filter *prog, size_t len, const char **why,
                     size_t *where);

/* Checks, then runs the program over *data. Returns 0 with the filter's
 * return value in *ret and the number of instructions executed in *steps
 * (may be NULL), or -1 as bpf_interp_check. */
int bpf_interp_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *data,
                   uint32_t *ret, size_t *steps, const char **why, size_t *where);

#endif /* __linux__ */

#endif
