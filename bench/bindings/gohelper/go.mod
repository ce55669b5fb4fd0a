// The Go side of bench/bindings/run.py, built against this checkout (a nested
// module: not part of the codeward module's zip).
module example.com/codeward-bench

go 1.22

require github.com/codeward/codeward v0.0.0

replace github.com/codeward/codeward => ../../..
