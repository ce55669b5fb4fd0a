/* platform.h - the name of the platform the core is built for.
 *
 * The calls a platform does not support (*_other.c) fail with
 * A3S_E_UNSUPPORTED and a message that names it, so a caller on macOS reads
 * "not supported on macOS", not a guess. */
#ifndef A3S_PLATFORM_H
#define A3S_PLATFORM_H

#if defined(__APPLE__)
#  define A3S_PLATFORM_NAME "macOS"
#elif defined(_WIN32)
#  define A3S_PLATFORM_NAME "Windows"
#elif defined(__FreeBSD__)
#  define A3S_PLATFORM_NAME "FreeBSD"
#elif defined(__OpenBSD__)
#  define A3S_PLATFORM_NAME "OpenBSD"
#elif defined(__NetBSD__)
#  define A3S_PLATFORM_NAME "NetBSD"
#elif defined(__linux__)
#  define A3S_PLATFORM_NAME "Linux"
#else
#  define A3S_PLATFORM_NAME "this platform"
#endif

#endif
