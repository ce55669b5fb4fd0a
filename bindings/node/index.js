'use strict';
// codeward for Node.js: the permission policy of the codeward security kernel,
// evaluated by the same C core as the Python and Go bindings.
// See README.md for the API and index.d.ts for the types.

const native = require('./lib/native');
const { PolicyError, NativeCoreError } = require('./lib/errors');
const { canonicalJson } = require('./lib/canonical-json');
const { argumentString, canonicalTool, normalizePath } = require('./lib/subject');
const { Glob } = require('./lib/glob');
const { PermissionPolicy } = require('./lib/policy');

/** The C library's version: {major, minor, patch, abi, string}. */
function version() {
  return native.version();
}

/** The ABI version of the C library (A3S_ABI_VERSION it was built with). */
function abiVersion() {
  return native.abiVersion();
}

module.exports = {
  version,
  abiVersion,
  PermissionPolicy,
  Glob,
  PolicyError,
  NativeCoreError,
  argumentString,
  canonicalJson,
  canonicalTool,
  normalizePath,
};
