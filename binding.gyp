# The Node addon: bindings/node/binding.c plus every source of the C core,
# compiled with the same strict flags as the Python extension (setup.py) plus
# the extra warnings of native/Makefile. The platform files in native/src
# guard themselves, so all of them are listed. It sits at the repository
# root because the npm package is the repository root (package.json "files"
# picks what the tarball carries), so the same paths hold in a checkout and
# in node_modules/codeward.
{
  "targets": [
    {
      "target_name": "codeward",
      "sources": [
        "bindings/node/binding.c",
        "<!@(node bindings/node/scripts/sources.js)"
      ],
      "include_dirs": ["native/include"],
      "defines": ["NAPI_VERSION=8", "A3S_BUILDING"],
      "cflags": ["-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-O2"],
      "cflags_c": ["-std=c11", "-Wpedantic", "-Wshadow", "-Wstrict-prototypes"],
      "conditions": [
        ["OS=='linux'", {"libraries": ["-lpthread"]}],
        ["OS=='mac'", {
          "xcode_settings": {
            "GCC_C_LANGUAGE_STANDARD": "c11",
            "GCC_SYMBOLS_PRIVATE_EXTERN": "YES",
            "WARNING_CFLAGS": ["-Wall", "-Wextra", "-Werror"]
          }
        }],
        ["OS=='win'", {
          "msvs_settings": {"VCCLCompilerTool": {"AdditionalOptions": ["/std:c11", "/W4"]}}
        }]
      ]
    }
  ]
}
