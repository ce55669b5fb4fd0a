/* version.c - library and ABI versions. */
#include "internal.h"

#define A3S_VERSION_MAJOR 0
#define A3S_VERSION_MINOR 1
#define A3S_VERSION_PATCH 0
#define A3S_STR2(x) #x
#define A3S_STR(x) A3S_STR2(x)

A3S_API const a3s_version_info *a3s_version(void) {
    static const a3s_version_info info = {
        A3S_VERSION_MAJOR,
        A3S_VERSION_MINOR,
        A3S_VERSION_PATCH,
        A3S_ABI_VERSION,
        A3S_STR(A3S_VERSION_MAJOR) "." A3S_STR(A3S_VERSION_MINOR) "." A3S_STR(A3S_VERSION_PATCH),
    };
    return &info;
}

A3S_API uint32_t a3s_abi_version(void) { return A3S_ABI_VERSION; }
