# Thin wrapper over CMake presets. The README's two commands are `make run` and `make test`.
JOBS ?= $(shell nproc)
MODEL ?= configs/models/nemotron-h-like.yaml
CLUSTER ?= configs/clusters/8xh100-80gb.yaml

.PHONY: deps build build-asan run test test-fast clean

# `pip install .` into .venv: scikit-build-core runs CMake on a preset in that preset's build folder,
# so the release build of `make run` and `make test` is the package a user installs (the `pipesmith`
# command and `import pipesmith`), built once.
PIP_INSTALL = CMAKE_GENERATOR="Unix Makefiles" CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) .venv/bin/python -m pip install \
	--disable-pip-version-check --no-build-isolation --no-deps -v .

deps:
	bash scripts/install-deps

build:
	cmake --preset default -DPIPESMITH_TESTS=ON -DPIPESMITH_BENCH=ON >/dev/null
	cmake --build --preset default -j $(JOBS)

build-asan:
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)

# Main job: install, build, synthesize a certified schedule for the default model and cluster
# (partition, placement and order searched; Z3 refines), re-check it with the independent checker,
# and draw it. Outputs land in out/.
run: deps
	$(PIP_INSTALL) -C build-dir=build -C cmake.args=--preset=default
	mkdir -p out
	./build/cli/pipesmith lower $(MODEL) --cluster $(CLUSTER)
	./build/cli/pipesmith synth $(MODEL) --cluster $(CLUSTER) --time-limit 30 -o out/schedule.yaml --csv out/schedule.csv --svg out/schedule.svg
	./build/cli/pipesmith verify out/schedule.yaml --svg out/schedule-verified.svg --trace out/schedule-trace.json
	@echo "open out/schedule.svg (Gantt chart) or load out/schedule-trace.json in https://ui.perfetto.dev"

# Whole test suite: release build (-Werror, `pip install .` on the ci preset), then scripts/test-suite:
# the Python suite (pytest, .venv, on that build) beside the C++ chain (release ctest of the `slow` and
# `unsanitized` entries, an ASan/UBSan build and its ctest of every other entry, the fuzz smoke).
# Each stage prints its time (scripts/stage), so a CI log shows where the suite's time goes.
STAGE = bash scripts/stage
test: deps
	$(STAGE) build env $(PIP_INSTALL) -C build-dir=build-ci -C cmake.args=--preset=ci \
	  -C cmake.define.PIPESMITH_TESTS=ON -C cmake.define.PIPESMITH_BENCH=ON
	JOBS=$(JOBS) bash scripts/test-suite

# Quick local loop: default build, tests without sanitizers.
test-fast: build
	ctest --test-dir build --output-on-failure -LE gpu -j $(JOBS)
	PIPESMITH=build/cli/pipesmith PIPESMITH_PYTHONPATH=build/python .venv/bin/python -m pytest tests/python -q

clean:
	rm -rf build build-ci build-asan build-clang
