'use strict';
// codeward for Node.js: the enforced sandbox agent commands run in and the
// permission policy of the codeward security kernel, over the same C core as
// the Python and Go bindings. See README.md for the API and index.d.ts for
// the types.

const native = require('./lib/native');
const {
  AbortError,
  ArgumentTypeError,
  PolicyError,
  NativeCoreError,
  SandboxArgumentError,
  SandboxClosedError,
  SandboxUnavailableError,
  NetworkGrantError,
} = require('./lib/errors');
const { NetworkGrant, canonicalHost } = require('./lib/netgrant/grant');
const { NetworkMediator, PROXY_PORT } = require('./lib/netgrant/mediator');
const { OwnedProcess } = require('./lib/process');
const { doctor } = require('./lib/doctor');
const { canonicalJson } = require('./lib/canonical-json');
const { argumentString, canonicalTool, normalizePath } = require('./lib/subject');
const { Glob } = require('./lib/glob');
const { PermissionPolicy } = require('./lib/policy');
const { CommandOutput } = require('./lib/output');
const {
  selectSandbox,
  processHostOptedIn,
  Sandbox,
  UnavailableSandbox,
  ENV_OPT_IN,
  UNLIMITED,
} = require('./lib/sandbox');

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
  selectSandbox,
  processHostOptedIn,
  Sandbox,
  UnavailableSandbox,
  CommandOutput,
  ENV_OPT_IN,
  UNLIMITED,
  doctor,
  SandboxArgumentError,
  SandboxUnavailableError,
  SandboxClosedError,
  NetworkGrantError,
  NetworkGrant,
  NetworkMediator,
  PROXY_PORT,
  canonicalHost,
  OwnedProcess,
  AbortError,
  ArgumentTypeError,
  PermissionPolicy,
  Glob,
  PolicyError,
  NativeCoreError,
  argumentString,
  canonicalJson,
  canonicalTool,
  normalizePath,
};
