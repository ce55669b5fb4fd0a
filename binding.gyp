# The Node addon: bindings/node/binding.c plus every source of the C core,
# compiled with the same strict flags as the Python extension (setup.py) plus
# the extra warnings of native/Makefile. The platform files in native/src
# guard themselves, so all of them are listed. It sits at the repository
# root because the npm package is the repository root (package.json "files"
# picks what the tarball carries), so the same paths hold in a checkout and
# in node_modules/codeward. On Linux it also builds a3s-init, the sandbox's init.
{
  "targets": [
    {
      "target_name": "codeward",
      "sources": [
        "bindings/node/binding.c",
        "bindings/node/sandbox.c",
        "<!@(node bindings/node/scripts/sources.js)"
      ],
      "include_dirs": ["native/include"],
      "defines": ["NAPI_VERSION=8", "A3S_BUILDING"],
      "cflags": ["-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-O2"],
      "cflags_c": ["-std=c11", "-Wpedantic", "-Wshadow", "-Wstrict-prototypes"],
      "conditions": [
        ["OS=='linux'", {
          "libraries": ["-lpthread", "-ldl"],
          # the addon is compiled with the SHA-256 of the a3s-init built with it, which the
          # core checks the init against (docs/security.md, "The init is pinned")
          "dependencies": ["a3s-init"],
          "include_dirs": ["<(SHARED_INTERMEDIATE_DIR)"],
          "defines": ["A3S_HAVE_INIT_SHA256"],
          "actions": [{
            "action_name": "init_sha256",
            "inputs": ["<(PRODUCT_DIR)/a3s-init"],
            "outputs": ["<(SHARED_INTERMEDIATE_DIR)/a3s_init_sha256.h"],
            "action": ["node", "bindings/node/scripts/init.js", "digest",
                       "<(PRODUCT_DIR)/a3s-init", "<(SHARED_INTERMEDIATE_DIR)/a3s_init_sha256.h"]
          }]
        }],
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
  ],
  # a3s-init, the sandbox's PID 1 (Linux only): built next to the addon, where
  # lib/init.js finds it (the prebuild carries one too: ci/npm_package.py)
  "conditions": [
    ["OS=='linux'", {
      "targets": [
        {
          "target_name": "a3s-init",
          "type": "executable",
          "sources": ["<!@(node bindings/node/scripts/init.js sources)"],
          "include_dirs": ["native/include"],
          "cflags": ["-Wall", "-Wextra", "-Werror", "-O2"],
          "cflags_c": ["-std=c11", "-Wpedantic", "-Wshadow", "-Wstrict-prototypes"],
          "ldflags": ["<!@(node bindings/node/scripts/init.js ldflags)"]
        }
      ]
    }]
  ]
}
