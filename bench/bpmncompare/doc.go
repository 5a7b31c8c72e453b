// Package bpmncompare runs the same BPMN files on Veena and on
// github.com/nitram509/lib-bpmn-engine, side by side in one run: one
// service task, a chain of ten, a parallel split and join of ten, an
// exclusive gateway choosing by a condition, and a timer catch. It is a
// module of its own so that Veena does not depend on the other engine.
//
//	cd bench/bpmncompare && VEENA_BPMN_COMPARE=1 go test -run TestCompare -v
//	cd bench/bpmncompare && go test -bench .
//
// Veena runs each process in memory with its whole token history
// recorded, two ways: on the kernel alone (the token game of the engine,
// what lib-bpmn-engine is), and through the engine's Go API on the
// in-memory store (each command a transaction with its rows: process,
// events, jobs). Service tasks are jobs a worker completes; lib-bpmn-engine
// runs them through a handler that completes them at once.
//
// A fourth row, the floor, writes each workload's history straight into
// memory with nothing running it (floor_test.go): no engine can record the
// same history for less, so lib ÷ floor bounds how much faster than
// lib-bpmn-engine any engine can be.
//
// lib-bpmn-engine slows as it keeps instances, so it gets a fresh engine
// every 100 instances, made with the timer stopped and its CPU time left
// out of cpu-ns/op. Instruction counts cannot stop a timer: take a hundredth
// of BenchmarkLibLoad's count off lib-bpmn-engine's. On a loaded machine,
// count instructions (garbage collection included) by running N and 3N
// processes under callgrind and dividing the difference by 2N:
//
//	go test -c -o /tmp/bc.test .
//	GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind /tmp/bc.test -test.run XXX \
//		-test.bench 'Compare/chain-10.bpmn/veena-kernel$' -test.benchtime 300x -test.cpu 1
package bpmncompare
