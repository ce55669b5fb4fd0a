'use strict';
// Prints the C core's sources for binding.gyp: every .c file in
// native/src, relative to the package root (where binding.gyp is, and
// where gyp resolves them from). Listing the directory, not naming files,
// keeps the addon in step with the Python build (setup.py globs the same
// directory).

const fs = require('node:fs');
const path = require('node:path');

const dir = path.join(__dirname, '..', '..', '..', 'native', 'src');
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.c')).sort();
process.stdout.write(files.map((f) => `native/src/${f}`).join('\n') + '\n');
