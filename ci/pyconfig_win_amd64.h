/* pyconfig.h for building codeward's abi3 extension for 64-bit Windows on Linux.
 *
 * Used only by ci/cross_compile.py, which copies this machine's Python headers and puts this
 * file in place of their (Linux) pyconfig.h. Written for this project from what the headers
 * read under Py_LIMITED_API: the sizes of the C types as 64-bit Windows has them (LLP64:
 * long is 4 bytes, pointers 8, wchar_t 2), and that the interpreter is a DLL whose functions
 * and data are imported (__declspec(dllimport)) while PyInit_* is exported. The stable ABI
 * depends on nothing else of the configuration; the extension links against python3.dll only.
 */
#ifndef CODEWARD_CROSS_PYCONFIG_H
#define CODEWARD_CROSS_PYCONFIG_H

#if !defined(_WIN64) || !defined(__x86_64__)
#error "this pyconfig.h is for x86_64 Windows targets only"
#endif

#define MS_WINDOWS 1
#define MS_WIN32 1
#define MS_WIN64 1
#define NT_THREADS 1
#define WITH_THREAD 1

/* the interpreter is python3.dll (the stable ABI's DLL): import its symbols */
#define Py_ENABLE_SHARED 1
#define HAVE_DECLSPEC_DLL 1

#define SIZEOF_SHORT 2
#define SIZEOF_INT 4
#define SIZEOF_LONG 4
#define SIZEOF_LONG_LONG 8
#define SIZEOF_VOID_P 8
#define SIZEOF_SIZE_T 8
#define SIZEOF_TIME_T 8
#define SIZEOF_OFF_T 4
#define SIZEOF_FPOS_T 8
#define SIZEOF_WCHAR_T 2
#define SIZEOF_FLOAT 4
#define SIZEOF_DOUBLE 8
#define SIZEOF__BOOL 1
#define SIZEOF_HKEY 8
#define ALIGNOF_SIZE_T 8
#define ALIGNOF_LONG 4
#define ALIGNOF_MAX_ALIGN_T 16
#define HAVE_LONG_LONG 1
#define HAVE_WCHAR_H 1
#define HAVE_STDDEF_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TYPES_H 1
#define PY_FORMAT_SIZE_T "I64"
#define Py_WCHAR_SIZE_T 2
#define DOUBLE_IS_LITTLE_ENDIAN_IEEE754 1

#endif
