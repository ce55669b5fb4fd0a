/* bpf_interp.c - a classic-BPF interpreter for seccomp filters, for tests. */
#include "bpf_interp.h"

#if defined(__linux__)

#include <string.h>

static int fail(const char *text, size_t at, const char **why, size_t *where) {
    if (why)
        *why = text;
    if (where)
        *where = at;
    return -1;
}

/* A jump from instruction `at` over `off` instructions must land inside. */
static int target_ok(size_t at, uint32_t off, size_t len) {
    return (uint64_t)at + 1 + off < len;
}

int bpf_interp_check(const struct sock_filter *prog, size_t len, const char **why,
                     size_t *where) {
    if (!prog || len == 0)
        return fail("empty program", 0, why, where);
    if (len > BPF_MAXINSNS)
        return fail("longer than BPF_MAXINSNS", len, why, where);
    for (size_t pc = 0; pc < len; pc++) {
        const struct sock_filter *in = &prog[pc];
        switch (in->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (in->k % 4 != 0 || (uint64_t)in->k + 4 > sizeof(struct seccomp_data))
                return fail("load outside seccomp_data or misaligned", pc, why, where);
            break;
        case BPF_ALU | BPF_AND | BPF_K:
        case BPF_RET | BPF_K:
            break;
        case BPF_JMP | BPF_JA:
            if (!target_ok(pc, in->k, len))
                return fail("jump outside the program", pc, why, where);
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
        case BPF_JMP | BPF_JGT | BPF_K:
        case BPF_JMP | BPF_JGE | BPF_K:
        case BPF_JMP | BPF_JSET | BPF_K:
            if (!target_ok(pc, in->jt, len) || !target_ok(pc, in->jf, len))
                return fail("jump outside the program", pc, why, where);
            break;
        default:
            return fail("unknown opcode", pc, why, where);
        }
    }
    if (prog[len - 1].code != (BPF_RET | BPF_K))
        return fail("last instruction is not a return", len - 1, why, where);
    return 0;
}

int bpf_interp_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *data,
                   uint32_t *ret, size_t *steps, const char **why, size_t *where) {
    if (bpf_interp_check(prog, len, why, where) != 0)
        return -1;
    uint32_t a = 0;
    size_t n = 0;
    /* Jumps only go forward, so this ends within len steps. */
    for (size_t pc = 0; pc < len; pc++) {
        const struct sock_filter *in = &prog[pc];
        n++;
        switch (in->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            /* the kernel loads a native-endian word of seccomp_data */
            memcpy(&a, (const unsigned char *)data + in->k, sizeof a);
            break;
        case BPF_ALU | BPF_AND | BPF_K:
            a &= in->k;
            break;
        case BPF_RET | BPF_K:
            *ret = in->k;
            if (steps)
                *steps = n;
            return 0;
        case BPF_JMP | BPF_JA:
            pc += in->k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += (a == in->k) ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            pc += (a > in->k) ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            pc += (a >= in->k) ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            pc += (a & in->k) ? in->jt : in->jf;
            break;
        default: /* bpf_interp_check refused it */
            return fail("unknown opcode", pc, why, where);
        }
    }
    return fail("ran off the end", len, why, where);
}

#else
typedef int bpf_interp_unused; /* ISO C forbids an empty unit */
#endif
