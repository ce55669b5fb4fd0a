'use strict';
// The Node side of bench/bindings/run.py: one sandbox over the workspace in
// argv[2], driven by lines on stdin, answered on stdout:
//   run N   N times exec('true'): prints the N wall times in ms, one line
//   rss     prints this process's resident memory in bytes (after a GC)
//   quit    closes the sandbox and exits
// The package is the repository root given in argv[3].

const readline = require('node:readline');

const { selectSandbox } = require(process.argv[3]);

async function main() {
  const sb = await selectSandbox(process.argv[2]);
  if (sb.backend !== 'bwrap') throw new Error(`no native sandbox here: ${sb}`);
  process.stdout.write('ready\n');
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const [what, arg] = line.split(' ');
    if (what === 'run') {
      const times = [];
      for (let i = 0; i < Number(arg); i++) {
        const start = process.hrtime.bigint();
        const out = await sb.exec('true');
        times.push(Number(process.hrtime.bigint() - start) / 1e6);
        if (out.exitCode !== 0) throw new Error(`true failed: ${JSON.stringify(out)}`);
      }
      process.stdout.write(`${times.join(' ')}\n`);
    } else if (what === 'rss') {
      if (global.gc) global.gc();
      process.stdout.write(`${process.memoryUsage().rss}\n`);
    } else {
      break;
    }
  }
  await sb.close();
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
