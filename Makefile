# Thin wrapper over CMake presets. The README's two commands are `make run` and `make test`.
JOBS ?= $(shell nproc)
MODEL ?= configs/models/nemotron-h-like.yaml
CLUSTER ?= configs/clusters/8xh100-80gb.yaml

.PHONY: deps build build-asan run test test-fast clean

deps:
	bash scripts/install-deps

build:
	cmake --preset default >/dev/null
	cmake --build --preset default -j $(JOBS)

build-asan:
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)

# Main job: install, build, and run pipesmith on the default example.
run: deps build
	./build/cli/pipesmith lower $(MODEL) --cluster $(CLUSTER)

# Whole test suite: release build (-Werror) + ASan/UBSan build of the tests.
test: deps
	cmake --preset ci >/dev/null
	cmake --build --preset ci -j $(JOBS)
	ctest --test-dir build-ci --output-on-failure -LE gpu -j $(JOBS)
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --test-dir build-asan --output-on-failure -LE 'gpu|slow' -j $(JOBS)

# Quick local loop: default build, tests without sanitizers.
test-fast: build
	ctest --test-dir build --output-on-failure -LE gpu -j $(JOBS)

clean:
	rm -rf build build-ci build-asan build-clang
